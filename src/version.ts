// Replaced at build time by build.ts (`define`); in dev it reads package.json's version.
declare const VSEARCH_VERSION: string | undefined;
export const VERSION: string = typeof VSEARCH_VERSION === "string" ? VSEARCH_VERSION : "0.1.0-dev";
