export { envelopeOf, ok, metaSchema, errorSchema, validationErrorSchema } from "./envelope.ts";
export { jsonError, defineRoute, dataResponse, jsonBody, RETRY_AFTER_HEADER } from "./route.ts";
export { pageQuery, idParam } from "./params.ts";
