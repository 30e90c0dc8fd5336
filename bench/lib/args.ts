/** The value after `--name` on the bench's command line, or undefined (the benches' one flag reader). */
export function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}
