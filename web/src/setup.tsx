/**
 * First run (SPEC §10): the page behind the setup link `vsearch serve` prints while no account
 * exists. It creates the first account and its admin, signs the admin in, and is gone afterwards
 * (the server answers 404: setup is done).
 */
import { useEffect, useState } from "preact/hooks";
import { call, client, session } from "./api.ts";
import { ErrorLine, useErrors } from "./ui.tsx";

export function SetupPage({ token, onDone }: { token: string; onDone: () => void }) {
  const [required, setRequired] = useState<boolean | null>(null);
  const { error, setError, act } = useErrors();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    void call(client.GET("/v1/setup"))
      .then((r) => setRequired(r.data.required))
      .catch(setError);
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    if (f.get("password") !== f.get("again"))
      return setError({ code: "MISMATCH", message: "The two passwords differ" });
    setBusy(true);
    await act(async () => {
      const body = {
        token,
        account_name: String(f.get("account_name") ?? ""),
        email: String(f.get("email") ?? ""),
        password: String(f.get("password") ?? ""),
      };
      const { data } = await call(client.POST("/v1/setup", { body }));
      session.set(data.token);
      location.replace("#/"); // the used link leaves the history too
      onDone();
    });
    setBusy(false);
  };
  return (
    <main id="main" class="signin">
      <h1>vsearch</h1>
      {required === false ? (
        <div class="card stack">
          <h2>Setup is done</h2>
          <p>
            This appliance already has an account. <a href="#/">Sign in</a> instead.
          </p>
        </div>
      ) : (
        <form onSubmit={submit} class="card stack" aria-label="First run">
          <h2>Welcome: create the first account</h2>
          <p class="muted">
            This creates the account that owns your videos and you, its admin. You can invite more people afterwards
            (Users).
          </p>
          <label>
            Account name
            <input name="account_name" required maxLength={255} placeholder="e.g. Studio" autoFocus />
          </label>
          <label>
            Your e-mail
            <input name="email" type="email" autoComplete="username" required />
          </label>
          <label>
            Password (at least 8 characters)
            <input name="password" type="password" autoComplete="new-password" minLength={8} required />
          </label>
          <label>
            Password again
            <input name="again" type="password" autoComplete="new-password" minLength={8} required />
          </label>
          <ErrorLine error={error} />
          <button type="submit" disabled={busy || required === null}>
            {busy ? "Creating…" : "Create account"}
          </button>
        </form>
      )}
    </main>
  );
}
