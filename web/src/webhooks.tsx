/** Webhooks (admins only): create (secret shown once), active toggle, test, delete, and each endpoint's delivery log with retry. */
import { useEffect, useState } from "preact/hooks";
import { call, client, fmtDate, type Schemas } from "./api.ts";
import { ColumnHeads, CreateOutcome, ErrorLine, useErrors, useSecretList } from "./ui.tsx";

type Delivery = Schemas["WebhookDelivery"];

const EVENTS = [
  "video.created",
  "video.deleted",
  "job.completed",
  "job.failed",
  "credits.low",
  "credits.exhausted",
  "account.deleted",
  "webhook.ping",
];

function Deliveries({ webhookId, refresh }: { webhookId: string; refresh: number }) {
  const [list, setList] = useState<Delivery[] | null>(null);
  const { error, act } = useErrors();
  const load = () =>
    act(async () => {
      const { data } = await call(
        client.GET("/v1/webhooks/{webhook_id}/deliveries", {
          params: { path: { webhook_id: webhookId }, query: { per_page: 20 } },
        }),
      );
      setList(data);
    });
  useEffect(() => void load(), [webhookId, refresh]);
  const retry = (d: Delivery) =>
    act(async () => {
      await call(
        client.POST("/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry", {
          params: { path: { webhook_id: webhookId, delivery_id: d.id } },
        }),
      );
      setTimeout(load, 500);
    });
  return (
    <div class="stack">
      <div class="row">
        <h3 class="grow">Deliveries</h3>
        <button type="button" class="small secondary" onClick={load}>
          Refresh
        </button>
      </div>
      <ErrorLine error={error} />
      {list && list.length === 0 ? <p class="muted">No deliveries yet.</p> : null}
      {list && list.length ? (
        <div class="scroll">
          <table class="deliveries stack-on-phone">
            <ColumnHeads names={["Event", "Status", "Attempts", "Response", "When"]} actions />
            <tbody>
              {list.map((d) => (
                <tr key={d.id}>
                  <th scope="row">{d.event}</th>
                  <td data-label="Status" class={`st-${d.status}`}>
                    {d.status}
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td data-label="Response">{d.response_status ?? d.error ?? "–"}</td>
                  <td data-label="When">{fmtDate(d.delivered_at ?? d.created_at)}</td>
                  <td>
                    {d.status === "failed" ? (
                      <button type="button" class="small" onClick={() => retry(d)}>
                        Retry
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

export function WebhooksPage() {
  const {
    items: hooks,
    load,
    act: run,
    error,
    secret,
    clearSecret,
    create,
  } = useSecretList(async () => (await call(client.GET("/v1/webhooks"))).data);
  const createHook = create(async (f) => {
    const body = {
      url: String(f.get("url") ?? ""),
      events: f.getAll("events").map(String) as Schemas["Webhook"]["events"],
    };
    return (await call(client.POST("/v1/webhooks", { body }))).data.secret;
  });
  const [refresh, setRefresh] = useState(0);
  const act = (fn: () => Promise<unknown>) =>
    run(async () => {
      await fn();
      await load();
      setTimeout(() => setRefresh((n) => n + 1), 700);
    });
  const path = (id: string) => ({ params: { path: { webhook_id: id } } });
  return (
    <section class="stack">
      <h1 tabIndex={-1}>Webhooks</h1>
      <form class="card stack" onSubmit={createHook}>
        <label>
          Endpoint URL <input name="url" type="url" required placeholder="https://example.org/hooks/vsearch" />
        </label>
        <fieldset class="row wrap">
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label>
              <input
                type="checkbox"
                name="events"
                value={ev}
                defaultChecked={ev.startsWith("job.") || ev === "webhook.ping"}
              />{" "}
              {ev}
            </label>
          ))}
        </fieldset>
        <button type="submit">Add webhook</button>
      </form>
      <CreateOutcome error={error} secret={secret} label="Webhook signing secret" onDone={clearSecret} />
      {hooks.map((h) => (
        <article class="card stack webhook" key={h.id} aria-label={`Webhook ${h.url}`}>
          <h2 class="mono wrap-any">{h.url}</h2>
          <p class="muted">{h.events.join(", ")}</p>
          <div class="row wrap">
            <label>
              <input
                type="checkbox"
                checked={h.is_active}
                onChange={(e) =>
                  act(() =>
                    call(
                      client.PATCH("/v1/webhooks/{webhook_id}", {
                        ...path(h.id),
                        body: { is_active: (e.target as HTMLInputElement).checked },
                      }),
                    ),
                  )
                }
              />{" "}
              Active
            </label>
            <button
              type="button"
              class="small"
              onClick={() => act(() => call(client.POST("/v1/webhooks/{webhook_id}/test", path(h.id))))}
            >
              Send test
            </button>
            <button
              type="button"
              class="small danger"
              onClick={() =>
                confirm(`Delete the webhook to ${h.url}?`) &&
                act(() => call(client.DELETE("/v1/webhooks/{webhook_id}", path(h.id))))
              }
            >
              Delete
            </button>
          </div>
          <Deliveries webhookId={h.id} refresh={refresh} />
        </article>
      ))}
    </section>
  );
}
