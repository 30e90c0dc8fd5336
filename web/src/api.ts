/**
 * The dashboard's only way to the server: the documented /v1 API with a session token, through a
 * client typed from the served OpenAPI document (openapi-fetch over web/src/openapi.gen.ts, which
 * web/api-types.ts generates at build time). A path, parameter, body or answer field the API does
 * not have is a type error, not a runtime surprise.
 *
 * The token lives in sessionStorage, not localStorage or a cookie: it survives a reload of the tab
 * but not closing it, is not shared with other tabs or sent automatically with cross-site requests
 * (no CSRF surface), and the strict CSP (same-origin scripts only) limits what could read it.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi.gen.ts";

/** The API's named schemas (Video, Job, Collection, …), as the server documents them. */
export type Schemas = components["schemas"];

const TOKEN = "vsearch.session";

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN);
  },
  set(token: string | null) {
    if (token) sessionStorage.setItem(TOKEN, token);
    else sessionStorage.removeItem(TOKEN);
  },
};

/** Listeners told when the session ends (401 anywhere): the shell goes back to sign-in. */
export const onSignedOut = new Set<() => void>();

type ErrorBody = Schemas["Error"] | Schemas["HTTPValidationError"] | null | undefined;

/** An error answer as one ApiError: the code and message, or the 422's field messages joined. */
export function toError(status: number, body: unknown): ApiError {
  const d = (body as ErrorBody)?.detail;
  if (Array.isArray(d))
    return new ApiError(
      status,
      "VALIDATION_ERROR",
      d.map((i) => `${(i.loc ?? []).slice(1).join(".") || "input"}: ${i.msg}`).join("; "),
    );
  if (d && typeof d === "object") return new ApiError(status, d.code ?? "ERROR", d.message ?? `HTTP ${status}`);
  return new ApiError(status, "HTTP_ERROR", `HTTP ${status}`);
}

/** Same-origin: the dashboard is served by the API it calls, wherever that is reached. */
export const client = createClient<paths>({ baseUrl: "" });

client.use({
  onRequest({ request }) {
    if (session.token) request.headers.set("Authorization", `Bearer ${session.token}`);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith("/v1/auth/sessions") && session.token) {
      session.set(null);
      for (const f of onSignedOut) f();
    }
    return response;
  },
});

/**
 * The answer of a typed call, or an ApiError: `const { data, meta } = await call(client.GET("/v1/videos", …))`.
 * A 204 answers `undefined`.
 */
export async function call<D>(pending: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  let r: { data?: D; error?: unknown; response: Response };
  try {
    r = await pending;
  } catch {
    throw new ApiError(0, "NETWORK_ERROR", "The server could not be reached");
  }
  if (!r.response.ok) throw toError(r.response.status, r.error);
  return r.data as D;
}

/**
 * A media link (presigned URL) as a path on this origin. The server builds its links from the
 * origin the request came to; the dashboard drops even that, so a proxy that rewrites the Host
 * header cannot send the player elsewhere. The signature covers the path only.
 */
export function local(url: string): string;
export function local(url: string | null | undefined): string | null;
export function local(url: string | null | undefined): string | null {
  if (!url) return null;
  const u = new URL(url, location.href);
  return u.pathname + u.search + u.hash;
}

/** Upload with XMLHttpRequest: fetch() cannot report upload progress. */
export function upload(
  file: File,
  collectionId: string,
  onProgress: (fraction: number) => void,
): Promise<Schemas["UploadAccepted"]> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/upload");
    if (session.token) xhr.setRequestHeader("Authorization", `Bearer ${session.token}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new ApiError(0, "NETWORK_ERROR", "The upload was interrupted"));
    xhr.onload = () => {
      let json: unknown = null;
      try {
        json = JSON.parse(xhr.responseText);
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve((json as { data: Schemas["UploadAccepted"] }).data);
      else reject(toError(xhr.status, json));
    };
    const form = new FormData();
    form.append("collection_id", collectionId);
    form.append("file", file);
    xhr.send(form);
  });
}

export const fmtTime = (s: number | null | undefined): string => {
  if (s == null || !Number.isFinite(s)) return "–";
  const m = Math.floor(s / 60);
  const sec = s - m * 60;
  return `${m}:${sec.toFixed(1).padStart(4, "0")}`;
};

export const fmtBytes = (n: number | null | undefined): string =>
  n == null
    ? "–"
    : n < 1024
      ? `${n} B`
      : n < 1024 ** 2
        ? `${(n / 1024).toFixed(1)} KiB`
        : n < 1024 ** 3
          ? `${(n / 1024 ** 2).toFixed(1)} MiB`
          : `${(n / 1024 ** 3).toFixed(2)} GiB`;

export const fmtDate = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : "never");
