/**
 * Issue 23: the docs generated from a table (docs/ERRORS.md from the error catalogue,
 * docs/CONFIGURATION.md from the settings table) match it; a drifted doc fails with the command
 * that rewrites it (scripts/gen-docs.ts).
 */
import { describe, expect, test } from "vitest";
import { docsState, REGENERATE, SECTIONS, withSection } from "../../scripts/gen-docs.ts";

describe("generated docs", () => {
  test(`each generated section is what its table renders (fix: ${REGENERATE})`, () => {
    const state = docsState();
    // Vacuity guard: every section was found and rendered something.
    expect(state.length).toBeGreaterThan(0);
    for (const s of SECTIONS) expect(s.render().split("\n").length, s.name).toBeGreaterThan(10);
    for (const d of state) expect(d.actual, `${d.file} is out of date; run ${REGENERATE}`).toBe(d.expected);
  });

  test.each(SECTIONS.map((s) => [s.file, s] as const))("a drifted or unmarked %s is caught", (_, s) => {
    const [doc] = docsState().filter((d) => d.file === s.file);
    // A cell of the generated table edited by hand is put back; text outside the markers is kept.
    const lines = doc.actual.split("\n");
    lines[lines.findIndex((l) => l.startsWith("|---")) + 1] = "| edited | by hand |";
    const edited = lines.join("\n");
    expect(edited).not.toBe(doc.actual);
    expect(withSection(edited, s)).toBe(doc.expected);
    expect(() => withSection("no markers here", s)).toThrow(/markers/);
  });
});
