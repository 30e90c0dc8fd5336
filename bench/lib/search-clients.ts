/**
 * The HTTP clients of bench/search-bench.ts, in a process of their own (so the server's process
 * CPU time is the server's alone): `bun search-clients.ts URL KEY CLIENTS SECS`, query texts as a
 * JSON array on stdin (each used once, in order). CLIENTS loops each send one search at a time
 * (all modes, form-encoded) until SECS have passed. Prints {requests, errors, secs, lat[]}.
 */
export {};
const [url, key, clientsArg, secsArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const secs = Number(secsArg);
const queries = JSON.parse(await Bun.stdin.text()) as string[];
let next = 0;
let errors = 0;
const lat: number[] = [];
const t0 = performance.now();
const until = t0 + secs * 1000;

async function client(): Promise<void> {
  while (performance.now() < until && next < queries.length) {
    const body = new URLSearchParams({ query: queries[next++] }).toString();
    const t = performance.now();
    const res = await fetch(`${url}/v1/search`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    await res.arrayBuffer();
    if (res.status === 200) lat.push(performance.now() - t);
    else errors++;
  }
}

await Promise.all(Array.from({ length: clients }, () => client()));
const elapsed = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ requests: lat.length, errors, secs: elapsed, lat }));
