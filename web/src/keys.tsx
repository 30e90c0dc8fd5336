/** API keys (admins only): create (secret shown once with a copy button), list with prefix and last use, revoke. */
import { call, client, fmtDate, type Schemas } from "./api.ts";
import { ColumnHeads, CreateOutcome, useSecretList } from "./ui.tsx";

export function KeysPage() {
  const {
    items: keys,
    load,
    act,
    error,
    secret,
    clearSecret,
    create,
  } = useSecretList(async () => (await call(client.GET("/v1/api_keys"))).data);
  const createKey = create(async (f) => {
    const permissions = f.get("permissions") === "read_only" ? "read_only" : "all";
    return (await call(client.POST("/v1/api_keys", { body: { name: String(f.get("name") ?? ""), permissions } }))).data
      .key;
  });
  const revoke = (k: Schemas["ApiKey"]) => {
    if (!confirm(`Revoke the key "${k.name}" (${k.prefix}…)? Programs using it stop working at once.`)) return;
    void act(async () => {
      await call(client.DELETE("/v1/api_keys/{key_id}", { params: { path: { key_id: k.id } } }));
      await load();
    });
  };
  return (
    <section class="stack">
      <h1 tabIndex={-1}>API keys</h1>
      <form class="card row wrap" onSubmit={createKey}>
        <label class="grow">
          Name <input name="name" required maxLength={255} />
        </label>
        <label>
          Permissions{" "}
          <select name="permissions">
            <option value="all">all</option>
            <option value="read_only">read only</option>
          </select>
        </label>
        <button type="submit">Create key</button>
      </form>
      <CreateOutcome error={error} secret={secret} label="New API key" onDone={clearSecret} />
      <div class="scroll">
        <table class="stack-on-phone">
          <caption class="sr-only">API keys</caption>
          <ColumnHeads names={["Name", "Prefix", "Permissions", "Last used", "Status"]} actions />
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <th scope="row">{k.name}</th>
                <td data-label="Prefix" class="mono">
                  {k.prefix}…
                </td>
                <td data-label="Permissions">{k.permissions}</td>
                <td data-label="Last used">{fmtDate(k.last_used_at)}</td>
                <td data-label="Status">{k.revoked_at ? `revoked ${fmtDate(k.revoked_at)}` : "active"}</td>
                <td>
                  {k.revoked_at ? null : (
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => revoke(k)}
                      aria-label={`Revoke ${k.name}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
