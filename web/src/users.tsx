/**
 * Users (admins only): invite someone (created with a one-time password, shown once, that they
 * must change at first sign-in), change a role, reset a password without e-mail (a new one-time
 * password), remove (after confirmation; their sessions end at once). The server keeps the last
 * admin: its refusal (LAST_ADMIN) shows as the error.
 */
import { useState } from "preact/hooks";
import { call, client, fmtDate, type Schemas } from "./api.ts";
import { ColumnHeads, CreateOutcome, useSecretList } from "./ui.tsx";

type User = Schemas["User"];
type Role = User["role"];

export function UsersPage({ me }: { me: string | null }) {
  const {
    items: users,
    load,
    act,
    error,
    secret,
    showSecret,
    clearSecret,
    create,
  } = useSecretList(async () => (await call(client.GET("/v1/users"))).data);
  const [resetFor, setResetFor] = useState<string | null>(null);
  const invite = create(async (f) => {
    const role: Role = f.get("role") === "admin" ? "admin" : "member";
    const r = await call(client.POST("/v1/users", { body: { email: String(f.get("email") ?? ""), role } }));
    setResetFor(r.data.user.email);
    return r.data.one_time_password;
  });
  const path = (u: User) => ({ params: { path: { user_id: u.id } } });
  const setRole = (u: User, role: Role) =>
    act(async () => {
      await call(client.PATCH("/v1/users/{user_id}", { ...path(u), body: { role } }));
      await load();
    });
  const reset = (u: User) => {
    if (!confirm(`Reset the password of ${u.email}? They are signed out at once and get a one-time password.`)) return;
    void act(async () => {
      const r = await call(client.POST("/v1/users/{user_id}/password", { ...path(u), body: {} }));
      // Shown once, like an invitation's.
      setResetFor(u.email);
      showSecret(r.data.one_time_password);
      await load();
    });
  };
  const remove = (u: User) => {
    if (!confirm(`Remove ${u.email}? They are signed out at once and can no longer sign in.`)) return;
    void act(async () => {
      await call(client.DELETE("/v1/users/{user_id}", path(u)));
      await load();
    });
  };
  return (
    <section class="stack">
      <h1 tabIndex={-1}>Users</h1>
      <form class="card row wrap" onSubmit={invite} aria-label="Invite a user">
        <label class="grow">
          E-mail <input name="email" type="email" required maxLength={320} autoComplete="off" />
        </label>
        <label>
          Role{" "}
          <select name="role">
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <button type="submit">Invite</button>
      </form>
      <p class="muted">
        An invited user signs in with the one-time password shown here (hand it over yourself: nothing is e-mailed) and
        chooses their own at once.
      </p>
      <CreateOutcome
        error={error}
        secret={secret}
        label={`One-time password for ${resetFor ?? "the user"}`}
        onDone={clearSecret}
      />
      <div class="scroll">
        <table class="stack-on-phone users">
          <caption class="sr-only">Users</caption>
          <ColumnHeads names={["E-mail", "Role", "Password", "Since"]} actions />
          <tbody>
            {users.map((u) => (
              <tr key={u.id} data-user={u.email}>
                <th scope="row">
                  {u.email}
                  {u.id === me ? <span class="tag">you</span> : null}
                </th>
                <td data-label="Role">
                  <select
                    value={u.role}
                    aria-label={`Role of ${u.email}`}
                    onChange={(e) => setRole(u, (e.target as HTMLSelectElement).value as Role)}
                  >
                    <option value="member">member</option>
                    <option value="admin">admin</option>
                  </select>
                </td>
                <td data-label="Password">{u.must_change_password ? "one-time (not changed yet)" : "set"}</td>
                <td data-label="Since">{fmtDate(u.created_at)}</td>
                <td class="row">
                  <button
                    type="button"
                    class="small secondary"
                    onClick={() => reset(u)}
                    aria-label={`Reset the password of ${u.email}`}
                  >
                    Reset password
                  </button>
                  <button type="button" class="small danger" onClick={() => remove(u)} aria-label={`Remove ${u.email}`}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
