/**
 * Minimal Prometheus text exposition: counters and a duration histogram kept in memory,
 * plus gauges computed on scrape by callbacks the composition root registers. Labels every
 * sample carries (`instance` = the node id when several processes share one database) are given
 * once, to the constructor.
 */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const labelText = (labels: Record<string, string>) => {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`,
  );
  return parts.length ? `{${parts.join(",")}}` : "";
};

/** One value of a gauge (with its labels). */
export interface GaugeSample {
  labels?: Record<string, string>;
  value: number;
}

export class Metrics {
  private readonly counters = new Map<string, { help: string; values: Map<string, number> }>();
  private readonly histo = new Map<string, { count: number; sum: number; buckets: number[] }>();
  private readonly gauges: {
    name: string;
    help: string;
    read: () => GaugeSample[] | Promise<GaugeSample[]>;
  }[] = [];

  constructor(private readonly constLabels: Record<string, string> = {}) {}

  inc(name: string, help: string, labels: Record<string, string> = {}, by = 1): void {
    let c = this.counters.get(name);
    if (!c) this.counters.set(name, (c = { help, values: new Map() }));
    const key = labelText({ ...this.constLabels, ...labels });
    c.values.set(key, (c.values.get(key) ?? 0) + by);
  }

  observeRequest(route: string, method: string, status: number, seconds: number): void {
    this.inc("vsearch_http_requests_total", "HTTP requests by route, method and status", {
      route,
      method,
      status: String(status),
    });
    const key = labelText({ ...this.constLabels, route, method });
    let h = this.histo.get(key);
    if (!h) this.histo.set(key, (h = { count: 0, sum: 0, buckets: BUCKETS.map(() => 0) }));
    h.count++;
    h.sum += seconds;
    BUCKETS.forEach((b, i) => {
      if (seconds <= b) h!.buckets[i]++;
    });
  }

  gauge(name: string, help: string, read: () => GaugeSample[] | Promise<GaugeSample[]>): void {
    this.gauges.push({ name, help, read });
  }

  async render(): Promise<string> {
    const out: string[] = [];
    for (const [name, c] of this.counters) {
      out.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} counter`);
      for (const [labels, v] of c.values) out.push(`${name}${labels} ${v}`);
    }
    const hn = "vsearch_http_request_duration_seconds";
    out.push(`# HELP ${hn} HTTP request duration`, `# TYPE ${hn} histogram`);
    for (const [labels, h] of this.histo) {
      const inner = labels.slice(1, -1);
      BUCKETS.forEach((b, i) => out.push(`${hn}_bucket{${inner},le="${b}"} ${h.buckets[i]}`));
      out.push(
        `${hn}_bucket{${inner},le="+Inf"} ${h.count}`,
        `${hn}_sum${labels} ${h.sum}`,
        `${hn}_count${labels} ${h.count}`,
      );
    }
    // Read together: a gauge that asks the store waits for its answer, the others do not wait for it.
    const samples = await Promise.all(this.gauges.map((g) => g.read()));
    for (const [i, g] of this.gauges.entries()) {
      out.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
      for (const s of samples[i]) out.push(`${g.name}${labelText({ ...this.constLabels, ...s.labels })} ${s.value}`);
    }
    return out.join("\n") + "\n";
  }
}
