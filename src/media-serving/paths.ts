/** The signed paths the media routes serve; the signer (search results, video records) and the routes agree on these. */
export const mediaPaths = {
  source: (videoId: string) => `/media/videos/${videoId}/source`,
  poster: (videoId: string) => `/media/videos/${videoId}/poster.jpg`,
  shot: (videoId: string, shotIndex: number) => `/media/videos/${videoId}/shots/${shotIndex}.jpg`,
  /** The web rendition (H.264 + AAC MP4) of a source a browser cannot play. */
  rendition: (videoId: string) => `/media/videos/${videoId}/web.mp4`,
  /** A cached clip export, `<start_ms>-<end_ms>.mp4`. */
  clip: (videoId: string, file: string) => `/media/videos/${videoId}/clips/${file}`,
};
