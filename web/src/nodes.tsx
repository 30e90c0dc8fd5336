/**
 * Nodes (admins only): every process on this database — the embedded server (`all`), `serve`
 * processes behind a proxy, `vsearch worker`s — with its status (running, stopped, lost), last
 * heartbeat, device, models, version and host (GET /v1/system/nodes, what `vsearch nodes` prints),
 * and why a worker refuses jobs when it does. Refreshes itself while the page is open.
 */
import { useEffect, useState } from "preact/hooks";
import { call, client, type Schemas } from "./api.ts";
import { ColumnHeads, ErrorLine, useErrors } from "./ui.tsx";

type Node = Schemas["Node"];
const REFRESH_MS = 10_000;

/** "4 s ago", "3 min ago", "2 h ago", "5 d ago". */
export function ageWords(secs: number): string {
  if (secs < 90) return `${secs} s ago`;
  if (secs < 90 * 60) return `${Math.round(secs / 60)} min ago`;
  if (secs < 36 * 3600) return `${Math.round(secs / 3600)} h ago`;
  return `${Math.round(secs / 86400)} d ago`;
}

const STATUS_CLASS: Record<Node["status"], string> = { running: "st-done", stopped: "st-skipped", lost: "st-failed" };

export function NodesPage() {
  const [nodes, setNodes] = useState<Node[] | null>(null);
  const { error, act } = useErrors();
  const load = () =>
    act(async () => {
      setNodes((await call(client.GET("/v1/system/nodes"))).data);
    });
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const refusing = nodes?.filter((n) => n.refused) ?? [];
  return (
    <section class="stack">
      <h1 tabIndex={-1}>Nodes</h1>
      <p class="muted">
        Every process on this database: the embedded server (<code>all</code>), servers (<code>serve</code>) and workers
        (<code>vsearch worker</code>). <em>Lost</em>: no heartbeat for three periods (killed, or cut off from the
        database). The same list on the server: <code>vsearch nodes</code>.
      </p>
      <ErrorLine error={error} />
      {nodes ? (
        nodes.length === 0 ? (
          <p>No node has registered yet.</p>
        ) : (
          <table class="stack-on-phone nodes">
            <ColumnHeads
              names={["Node", "Role", "Status", "Last heartbeat", "Runs", "Device", "Models", "Version", "Host"]}
            />
            <tbody>
              {nodes.map((n) => (
                <tr key={n.id} data-node={n.id}>
                  <th scope="row" class="mono wrap-any">
                    {n.id}
                  </th>
                  <td data-label="Role" class="nowrap">
                    {n.role}
                  </td>
                  <td data-label="Status">
                    <span class={STATUS_CLASS[n.status]}>{n.status}</span>
                    {n.refused ? <strong class="st-failed"> · refusing jobs</strong> : null}
                  </td>
                  <td data-label="Last heartbeat" title={n.last_heartbeat}>
                    {ageWords(n.heartbeat_age_secs)}
                  </td>
                  <td data-label="Runs">{n.kinds.length ? `${n.kinds.join(", ")} × ${n.concurrency}` : "HTTP only"}</td>
                  <td data-label="Device">{n.device}</td>
                  <td data-label="Models" class="wrap-any">
                    pictures: {n.models["image-text"] ?? "none"}
                    <br />
                    speech: {n.models.speech ?? "none"}
                  </td>
                  <td data-label="Version" class="nowrap">
                    {n.version}
                  </td>
                  <td data-label="Host" class="wrap-any">
                    {n.host} (pid {n.pid})
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      {refusing.length ? (
        <>
          <h2>Refusing jobs</h2>
          <ul class="warnings">
            {refusing.map((n) => (
              <li key={n.id} class="card" data-refused={n.id}>
                <p>
                  <strong class="mono">{n.id}</strong> ({n.role} on {n.host}) claims nothing: {n.refused}
                </p>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <button type="button" class="secondary" onClick={load}>
        Refresh
      </button>
    </section>
  );
}
