/**
 * Your password: change it (the current one is asked, so an open session on a shared screen
 * cannot lock you out). After signing in with a one-time password this is the only page there
 * is until a new password is chosen; your other sessions end when it changes.
 */
import { useState } from "preact/hooks";
import { call, client } from "./api.ts";
import { ErrorLine, useErrors } from "./ui.tsx";

export function PasswordForm({ oneTime, onChanged }: { oneTime: boolean; onChanged: () => void }) {
  const { error, setError, act } = useErrors();
  const [done, setDone] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const current_password = String(f.get("current") ?? "");
    const new_password = String(f.get("new") ?? "");
    if (new_password !== String(f.get("again") ?? ""))
      return setError({ code: "MISMATCH", message: "The two new passwords differ" });
    await act(async () => {
      await call(client.PUT("/v1/auth/password", { body: { current_password, new_password } }));
      form.reset();
      setDone(true);
      onChanged();
    });
  };
  return (
    <form class="card stack" onSubmit={submit} aria-label="Change password">
      <h2>{oneTime ? "Choose your own password" : "Change your password"}</h2>
      {oneTime ? (
        <p class="muted">
          You signed in with a one-time password. Choose your own to go on; it is not sent anywhere but here.
        </p>
      ) : null}
      <label>
        {oneTime ? "One-time password" : "Current password"}
        <input name="current" type="password" autoComplete="current-password" required />
      </label>
      <label>
        New password (at least 8 characters)
        <input name="new" type="password" autoComplete="new-password" minLength={8} required />
      </label>
      <label>
        New password again
        <input name="again" type="password" autoComplete="new-password" minLength={8} required />
      </label>
      <ErrorLine error={error} />
      {done ? (
        <p class="ok" role="status">
          Password changed; your other sessions were signed out.
        </p>
      ) : null}
      <button type="submit">Change password</button>
    </form>
  );
}

export function AccountPage({ email }: { email: string | null }) {
  return (
    <section class="stack">
      <h1 tabIndex={-1}>Your account</h1>
      {email ? <p class="muted">Signed in as {email}</p> : null}
      <PasswordForm oneTime={false} onChanged={() => {}} />
    </section>
  );
}
