/**
 * The vsearch dashboard: sign-in (or the first-run setup behind the link `serve` prints), then a
 * hash-routed shell (#/, #/search, #/videos/<id>?t=, #/jobs, #/account, and for admins #/users,
 * #/system, #/nodes, #/keys, #/webhooks; a member sent to one is told it is for admins). Hash routes keep the server to one page (`/`) and make every view
 * linkable. A session signed in with a one-time password sees only the form that replaces it.
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
import { JobsPage } from "./jobs.tsx";
import { UsersPage } from "./users.tsx";
import { SystemPage } from "./system.tsx";
import { NodesPage } from "./nodes.tsx";
import { AccountPage, PasswordForm } from "./account.tsx";
import { SetupPage } from "./setup.tsx";

type Me = Schemas["Whoami"];
const whoami = async () => (await call(client.GET("/v1/auth/whoami"))).data;

/** The hash route: its path and its query (`#/videos/vid_x?t=12.5`). */
function useRoute(): { path: string; query: URLSearchParams } {
  const read = () => {
    const [path, q = ""] = (location.hash || "#/").slice(1).split("?");
    return { path: path || "/", query: new URLSearchParams(q) };
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const f = () => setRoute(read());
    addEventListener("hashchange", f);
    return () => removeEventListener("hashchange", f);
  }, []);
  return route;
}

function SignIn({ onIn }: { onIn: (me: Me) => void }) {
  const { error, act } = useErrors();
  const [busy, setBusy] = useState(false);
  const [firstRun, setFirstRun] = useState(false);
  useEffect(() => {
    void call(client.GET("/v1/setup"))
      .then((r) => setFirstRun(r.data.required))
      .catch(() => {});
  }, []);
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
      {firstRun ? (
        <p class="card notice" role="status">
          This appliance has no account yet. Open the one-time setup link that <code>vsearch serve</code> printed when
          it started (or create one with <code>vsearch accounts create</code> and{" "}
          <code>vsearch users create --admin</code>).
        </p>
      ) : null}
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
          Forgot your password? An admin of your account resets it (Users, or <code>vsearch users passwd</code>). API
          reference: <a href="/docs">/docs</a>
        </p>
      </form>
    </main>
  );
}

const NAV: { href: string; label: string; admin?: boolean }[] = [
  { href: "#/", label: "Collections" },
  { href: "#/search", label: "Search" },
  { href: "#/jobs", label: "Jobs" },
  { href: "#/users", label: "Users", admin: true },
  { href: "#/keys", label: "API keys", admin: true },
  { href: "#/webhooks", label: "Webhooks", admin: true },
  { href: "#/system", label: "System", admin: true },
  { href: "#/nodes", label: "Nodes", admin: true },
];

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checked, setChecked] = useState(!session.token);
  const { path, query } = useRoute();
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
  }, [path, me]);

  if (path === "/setup" && !me)
    return <SetupPage token={query.get("token") ?? ""} onDone={() => void whoami().then(setMe, () => {})} />;
  if (!checked) return <p class="muted pad">Loading…</p>;
  if (!me) return <SignIn onIn={setMe} />;
  const signOut = async () => {
    await call(client.DELETE("/v1/auth/sessions/current")).catch(() => {});
    session.set(null);
    setMe(null);
    location.hash = "#/";
  };
  if (me.must_change_password)
    return (
      <main id="main" class="signin">
        <h1>vsearch</h1>
        <PasswordForm oneTime onChanged={() => void whoami().then(setMe, () => {})} />
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  const admin = me.role === "admin";
  let page;
  const video = /^\/videos\/([\w-]+)$/.exec(path);
  const t = Number(query.get("t"));
  if (path === "/search") page = <SearchPage />;
  else if (video) page = <VideoPage id={video[1]} start={Number.isFinite(t) && t > 0 ? t : undefined} />;
  else if (path === "/jobs") page = <JobsPage />;
  else if (path === "/account") page = <AccountPage email={me.email} />;
  else if (path === "/users" && admin) page = <UsersPage me={me.member_id} />;
  else if (path === "/system" && admin) page = <SystemPage />;
  else if (path === "/keys" && admin) page = <KeysPage />;
  else if (path === "/webhooks" && admin) page = <WebhooksPage />;
  else if (path === "/nodes" && admin) page = <NodesPage />;
  else if (NAV.some((n) => n.admin && n.href === `#${path}`))
    page = (
      <>
        <h1 tabIndex={-1}>Admins only</h1>
        <p>This page is for your account's admins; ask one of them if you need what it shows.</p>
      </>
    );
  else if (path === "/") page = <CollectionsPage />;
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
        <a href="#/account" class="account" aria-current={current === "#/account" ? "page" : undefined}>
          {me.email ?? "Account"}
        </a>
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
