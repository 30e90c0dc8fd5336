/**
 * The vsearch dashboard: sign-in, then a hash-routed shell (#/, #/search, #/videos/<id>, #/keys,
 * #/webhooks). Hash routes keep the server to one page (`/`) and make every view linkable.
 */
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import "./style.css";
import { call, client, onSignedOut, type Schemas, session } from "./api.ts";
import { ErrorLine, useErrors } from "./ui.tsx";
import { CollectionsPage } from "./collections.tsx";
import { SearchPage } from "./search.tsx";
import { VideoPage } from "./video.tsx";
import { KeysPage } from "./keys.tsx";
import { WebhooksPage } from "./webhooks.tsx";

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const f = () => setHash(location.hash || "#/");
    addEventListener("hashchange", f);
    return () => removeEventListener("hashchange", f);
  }, []);
  return hash;
}

type Me = Schemas["Whoami"];
const whoami = async () => (await call(client.GET("/v1/auth/whoami"))).data;

function SignIn({ onIn }: { onIn: (me: Me) => void }) {
  const { error, act } = useErrors();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    await act(async () => {
      const body = { email: String(f.get("email") ?? ""), password: String(f.get("password") ?? "") };
      const { data } = await call(client.POST("/v1/auth/sessions", { body }));
      session.set(data.token);
      onIn(await whoami());
    });
    setBusy(false);
  };
  return (
    <main id="main" class="signin">
      <h1>vsearch</h1>
      <form onSubmit={submit} class="card stack">
        <h2>Sign in</h2>
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required autoFocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <ErrorLine error={error} />
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <p class="muted">
          Accounts and users are created with the CLI (<code>vsearch users create</code>). API reference:{" "}
          <a href="/docs">/docs</a>
        </p>
      </form>
    </main>
  );
}

const NAV: { href: string; label: string; admin?: boolean }[] = [
  { href: "#/", label: "Collections" },
  { href: "#/search", label: "Search" },
  { href: "#/keys", label: "API keys", admin: true },
  { href: "#/webhooks", label: "Webhooks", admin: true },
];

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checked, setChecked] = useState(!session.token);
  const hash = useHash();
  const mainRef = useRef<HTMLElement>(null);

  useEffect(() => {
    const out = () => setMe(null);
    onSignedOut.add(out);
    if (session.token) {
      whoami()
        .then(setMe)
        .catch(() => session.set(null))
        .finally(() => setChecked(true));
    }
    return () => onSignedOut.delete(out);
  }, []);
  // A new view moves focus to its heading, so screen readers announce the page change; not on
  // the first render, where focus stays at the top of the page (the skip link comes first).
  const navigated = useRef(false);
  useEffect(() => {
    if (!me) return;
    if (navigated.current) mainRef.current?.querySelector("h1")?.focus();
    navigated.current = true;
  }, [hash, me]);

  if (!checked) return <p class="muted pad">Loading…</p>;
  if (!me) return <SignIn onIn={setMe} />;
  const admin = me.role === "admin";
  const signOut = async () => {
    await call(client.DELETE("/v1/auth/sessions/current")).catch(() => {});
    session.set(null);
    setMe(null);
    location.hash = "#/";
  };
  const path = hash.slice(1).split("?")[0];
  let page;
  const video = /^\/videos\/([\w-]+)$/.exec(path);
  if (path === "/search") page = <SearchPage />;
  else if (video) page = <VideoPage id={video[1]} />;
  else if (path === "/keys" && admin) page = <KeysPage />;
  else if (path === "/webhooks" && admin) page = <WebhooksPage />;
  else if (path === "/" || path === "") page = <CollectionsPage />;
  else page = <h1 tabIndex={-1}>Not found</h1>;
  const current = video ? "#/" : `#${path}`;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), mainRef.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a href="#/" class="brand">
          vsearch
        </a>
        <nav aria-label="Main">
          {NAV.filter((n) => !n.admin || admin).map((n) => (
            <a href={n.href} aria-current={current === n.href ? "page" : undefined}>
              {n.label}
            </a>
          ))}
          <a href="/docs">API docs</a>
        </nav>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={mainRef} tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
