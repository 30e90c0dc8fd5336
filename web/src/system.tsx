/**
 * System (admins only): what `vsearch doctor` says — the models per role, the accelerator, each
 * missing piece with the command that fixes it (GET /v1/system/status) — and whether the server
 * is ready (GET /readyz: database, disk, search index).
 */
import { useEffect, useState } from "preact/hooks";
import { call, client, type Schemas } from "./api.ts";
import { ColumnHeads, ErrorLine, useErrors } from "./ui.tsx";

type Status = Schemas["SystemStatus"];
type Readiness = Schemas["Readiness"];

const ROLES: [keyof Status["models"], string][] = [
  ["image-text", "Pictures (frames and scenes)"],
  ["speech", "Speech (transcripts)"],
  ["text", "Text meaning (optional)"],
];

export function SystemPage() {
  const [status, setStatus] = useState<Status | null>(null);
  const [ready, setReady] = useState<Readiness | null>(null);
  const { error, act } = useErrors();
  const load = () =>
    act(async () => {
      setStatus((await call(client.GET("/v1/system/status"))).data);
      // /readyz answers 503 with the same body when something is wrong: both are worth showing.
      const r = await client.GET("/readyz");
      setReady((r.data ?? r.error ?? null) as Readiness | null);
    });
  useEffect(() => void load(), []);
  return (
    <section class="stack">
      <h1 tabIndex={-1}>System</h1>
      <ErrorLine error={error} />
      {status ? (
        <>
          <p class="muted">
            vsearch {status.version} · models run on <strong>{status.device.in_use}</strong> (asked:{" "}
            {status.device.requested}): {status.device.reason}
          </p>
          <h2>Models</h2>
          <table class="stack-on-phone models">
            <ColumnHeads names={["For", "Model", "Weights"]} />
            <tbody>
              {ROLES.map(([role, label]) => {
                const m = status.models[role];
                return (
                  <tr key={role} data-role={role}>
                    <th scope="row">{label}</th>
                    <td data-label="Model">{m ? m.model_id : <span class="st-failed">not installed</span>}</td>
                    <td data-label="Weights">{m ? m.dtype : "–"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <h2>What to fix</h2>
          {status.warnings.length === 0 ? (
            <p class="ok">Nothing: every model is installed and every video was indexed with it.</p>
          ) : (
            <ul class="warnings">
              {status.warnings.map((w) => (
                <li key={w.role + w.code} class="card" data-code={w.code}>
                  <p>{w.message}</p>
                  <p>
                    Fix, on the server: <code class="mono">{w.fix}</code>
                  </p>
                </li>
              ))}
            </ul>
          )}
          <h2>Jobs</h2>
          <p>
            {Object.entries(status.jobs)
              .map(([s, n]) => `${n} ${s}`)
              .join(" · ")}{" "}
            — <a href="#/jobs">see the jobs</a>
          </p>
        </>
      ) : null}
      {ready ? (
        <>
          <h2>Readiness: {ready.status === "ready" ? "ready" : "NOT READY"}</h2>
          <table class="stack-on-phone checks">
            <ColumnHeads names={["Check", "State"]} />
            <tbody>
              {Object.entries(ready.checks).map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k.replace(/_/g, " ")}</th>
                  <td data-label="State">{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <button type="button" class="secondary" onClick={load}>
        Check again
      </button>
    </section>
  );
}
