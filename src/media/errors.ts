/**
 * Errors of the media layer. This layer sits below the services, so it never throws AppError: the
 * pipeline maps `MediaError.code` onto the job's `error: {code, message}` (SPEC §5) and the upload
 * route maps UNSUPPORTED_FORMAT onto 415.
 */
export type MediaErrorCode =
  /** Not a container we accept (an image, text, an audio-only format, random bytes). */
  | "UNSUPPORTED_FORMAT"
  /** An accepted container without a video stream (e.g. an .m4a, or an .mp4 holding only audio). */
  | "NO_VIDEO_STREAM"
  /** Asked for audio from a file that has none. */
  | "NO_AUDIO_STREAM"
  /** Zero bytes. */
  | "EMPTY_FILE"
  /** Looks like a supported container but cannot be read or decoded (truncated, corrupt header). */
  | "DECODE_FAILED"
  /** The path does not exist or is not a regular file. */
  | "FILE_NOT_FOUND"
  /** A subprocess ran past its wall-clock limit or stopped making progress; it was killed. */
  | "TIMEOUT"
  /** ffmpeg/ffprobe could not be started, crashed, or printed something we could not parse. */
  | "TOOL_FAILED"
  /** Frames larger than `max_video_pixels` (declared, or refused by the decoder); media/bounds.ts. */
  | "VIDEO_TOO_LARGE"
  /** More frames than a job may count (media/bounds.ts). */
  | "VIDEO_TOO_LONG";

export class MediaError extends Error {
  constructor(
    readonly code: MediaErrorCode,
    message: string,
    /** The last stderr lines of the tool, for logs; never shown to clients as-is. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = "MediaError";
  }

  /** The `{code, message}` shape a job record stores. */
  toJSON(): { code: MediaErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export const isMediaError = (e: unknown, code?: MediaErrorCode): e is MediaError =>
  e instanceof MediaError && (code === undefined || e.code === code);
