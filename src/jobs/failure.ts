/** What a failed job (or task) says: shown on the job as `error` (SPEC §5). */
export interface JobError {
  code: string;
  message: string;
}

/** A failure with a code the job's owner can act on (DECODE_FAILED, MODEL_LOAD_FAILED, …). */
export class JobFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "JobFailure";
  }
}

/** What a failed job tells its owner to do; `vsearch jobs retry` / POST /v1/jobs/{id}/retry re-run it. */
export const CRASHED_REPEATEDLY_HINT =
  "The file may crash the decoder or a model; check the server log for this job, then retry it with `vsearch jobs retry ID` or POST /v1/jobs/{id}/retry (or delete the video)";
