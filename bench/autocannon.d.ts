// autocannon ships no types and @types/autocannon is not installed; the benches use a small,
// loosely typed part of its API (see bench/load.ts, bench/hostile-input.ts).
declare module "autocannon" {
  const autocannon: (opts: Record<string, unknown>) => Promise<any>;
  export default autocannon;
}
