/**
 * The dashboard's only way to the server: the documented /v1 API with a session token.
 *
 * The token lives in sessionStorage, not localStorage or a cookie: it survives a reload of the tab
 * but not closing it, is not shared with other tabs or sent automatically with cross-site requests
 * (no CSRF surface), and the strict CSP (same-origin scripts only) limits what could read it.
 */
const TOKEN = "vsearch.session";

export interface Me {
  user_id: string;
  role: string | null;
}

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

function toError(status: number, body: any): ApiError {
  const d = body?.detail;
  if (Array.isArray(d))
    return new ApiError(
      status,
      "VALIDATION_ERROR",
      d.map((i: any) => `${(i.loc ?? []).slice(1).join(".") || "input"}: ${i.msg}`).join("; "),
    );
  if (d && typeof d === "object") return new ApiError(status, d.code ?? "ERROR", d.message ?? `HTTP ${status}`);
  return new ApiError(status, "HTTP_ERROR", `HTTP ${status}`);
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<{ data: T; meta: any }> {
  const headers: Record<string, string> = {};
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  let payload: BodyInit | undefined;
  if (body instanceof FormData || body instanceof URLSearchParams) payload = body;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload });
  if (res.status === 204) return { data: undefined as T, meta: {} };
  const json = await res.json().catch(() => null);
  if (!res.ok) {
    const err = toError(res.status, json);
    if (res.status === 401 && path !== "/v1/auth/sessions") {
      session.set(null);
      for (const f of onSignedOut) f();
    }
    throw err;
  }
  return json;
}

/** Upload with XMLHttpRequest: fetch() cannot report upload progress. */
export function upload(
  file: File,
  collectionId: string,
  onProgress: (fraction: number) => void,
): Promise<{ job_id: string; video_id: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/upload");
    if (session.token) xhr.setRequestHeader("Authorization", `Bearer ${session.token}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new ApiError(0, "NETWORK_ERROR", "The upload was interrupted"));
    xhr.onload = () => {
      let json: any = null;
      try {
        json = JSON.parse(xhr.responseText);
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve(json.data);
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

export const fmtBytes = (n: number): string =>
  n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KiB`
      : n < 1024 ** 3
        ? `${(n / 1024 ** 2).toFixed(1)} MiB`
        : `${(n / 1024 ** 3).toFixed(2)} GiB`;

export const fmtDate = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : "never");
