export { envelopeOf, ok, metaSchema, errorSchema, validationErrorSchema } from "./envelope.ts";
export { jsonError, defineRoute, RETRY_AFTER_HEADER } from "./route.ts";
export { pageQuery, idParam } from "./params.ts";
