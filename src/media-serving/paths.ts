/** The signed paths the media routes serve; the signer (search results, video records) and the routes agree on these. */
export const mediaPaths = {
  source: (videoId: string) => `/media/videos/${videoId}/source`,
  poster: (videoId: string) => `/media/videos/${videoId}/poster.jpg`,
  shot: (videoId: string, shotIndex: number) => `/media/videos/${videoId}/shots/${shotIndex}.jpg`,
};
