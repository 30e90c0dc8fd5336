export { envelopeOf, ok, metaSchema, errorSchema, validationErrorSchema } from "./envelope.ts";
export { jsonError, defineRoute, dataResponse, jsonBody } from "./route.ts";
export { pageQuery, idParam } from "./params.ts";
