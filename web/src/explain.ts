/**
 * Words for people who never read the API: what each indexing stage does, and what a job's error
 * code means with what to do about it (the jobs page, the video page and the upload list show
 * them). Codes not listed here show their own message.
 */

export const STAGE_WORDS: Record<string, string> = {
  probe: "reading the file",
  shots: "finding the shots",
  frames: "picking frames",
  embeddings: "learning what the frames show",
  scenes: "describing each shot",
  audio: "extracting the sound",
  transcript: "writing down what is said",
  thumbnails: "making thumbnails",
  ocr: "reading text on screen",
};

export const stageWords = (stage: string | null | undefined): string =>
  stage ? (STAGE_WORDS[stage] ?? stage) : "waiting for its turn";

const STATUS_WORDS: Record<string, string> = {
  queued: "waiting",
  pending: "starting",
  processing: "indexing",
  done: "done",
  ready: "searchable",
  failed: "failed",
};
export const statusWords = (s: string): string => STATUS_WORDS[s] ?? s;

export interface Explanation {
  meaning: string;
  fix: string;
}

export const JOB_ERRORS: Record<string, Explanation> = {
  DECODE_FAILED: {
    meaning: "The file could not be decoded: not one picture of it could be read.",
    fix: "Check that the file plays on your computer; export or copy it again and upload the new file. A partly damaged file is indexed as far as it plays.",
  },
  NO_VIDEO_STREAM: {
    meaning: "The file holds no video, only sound or data.",
    fix: "Upload the video itself; vsearch indexes videos, not audio files.",
  },
  UNSUPPORTED_FORMAT: {
    meaning: "The file is not a video container vsearch reads (MP4, MOV, AVI, WebM, MPEG, MKV).",
    fix: "Convert it to MP4 (for example with ffmpeg or HandBrake) and upload that.",
  },
  EMPTY_FILE: { meaning: "The file is empty (0 bytes).", fix: "Upload the file again; the copy was incomplete." },
  FILE_NOT_FOUND: {
    meaning: "The uploaded file is gone from the server's data folder.",
    fix: "Delete this video and upload the file again.",
  },
  TIMEOUT: {
    meaning: "Decoding took too long and was stopped (the server was very busy, or the file is unusual).",
    fix: "Retry when the server is less busy; if it fails again, convert the file to MP4 and upload that.",
  },
  TOOL_FAILED: {
    meaning: "The video tools on the server failed to run.",
    fix: "Ask the operator to run `vsearch doctor`; then Retry.",
  },
  MODEL_NOT_INSTALLED: {
    meaning: "A model the indexing needs is not installed.",
    fix: "Ask the operator to install it (the System page says which and how), then Retry.",
  },
  MODEL_LOAD_FAILED: {
    meaning: "An installed model could not be loaded.",
    fix: "Ask the operator to run `vsearch models verify` and `vsearch doctor`, then Retry.",
  },
  INFERENCE_FAILED: {
    meaning: "The model failed while reading this video.",
    fix: "Retry; if it fails again, the server log has the details under this job.",
  },
  DEVICE_UNAVAILABLE: {
    meaning: "The accelerator the server was told to use is not available.",
    fix: "Ask the operator to check the `device` setting (`vsearch doctor`), then Retry.",
  },
  INSUFFICIENT_CREDITS: {
    meaning: "The account has run out of credits.",
    fix: "Ask the operator for more credits (`vsearch credits grant`), then Retry.",
  },
  INSUFFICIENT_STORAGE: {
    meaning: "The server's disk is full.",
    fix: "Ask the operator to free disk space, then Retry.",
  },
  ABORTED: {
    meaning: "Indexing was interrupted (the server stopped, or the video was deleted).",
    fix: "Retry.",
  },
  VIDEO_NOT_FOUND: { meaning: "The video was deleted before it was indexed.", fix: "Nothing to do." },
  INTERNAL_ERROR: {
    meaning: "Something unexpected went wrong on the server.",
    fix: "Retry; if it fails again, the server log has the details under this job.",
  },
};

export const explain = (code: string | null | undefined): Explanation | null =>
  code ? (JOB_ERRORS[code] ?? null) : null;
