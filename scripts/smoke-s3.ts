/**
 * The smoke test's object-storage pass (scripts/smoke-test.ts, step 12): the compiled binary with
 * its media in an S3-compatible bucket (s3rver from node_modules, run by `node` on loopback:
 * test/helpers/s3.ts), proving that Bun's built-in S3 client works inside the binary: `doctor`
 * reaches the bucket (and never prints the secret key), an uploaded clip is put there and indexed,
 * and `serve` answers its thumbnail link with a redirect to a presigned URL of the bucket that
 * serves the JPEG, and its playback link with one that answers a byte range. Skipped, saying so,
 * without `node` on PATH.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { startS3 } from "../test/helpers/s3.ts";
import type { SmokeHarness } from "./smoke-pg.ts";

/** Never printed by the binary (s3rver does not check it). */
const SECRET = "smoke-s3-secret-never-shown";

export async function objectStoragePass(h: SmokeHarness): Promise<void> {
  const { check, json, brief } = h;
  if (!Bun.which("node")) {
    console.log("S3 pass skipped: no `node` on PATH to run s3rver");
    return;
  }
  const s3 = await startS3();
  const data = join(h.work, "s3-data");
  const env = { ...s3.env("smoke/"), VSEARCH_S3_SECRET_ACCESS_KEY: SECRET };
  const quiet = (...r: { stdout: string; stderr: string }[]) =>
    r.every((x) => !x.stdout.includes(SECRET) && !x.stderr.includes(SECRET));
  let server: ReturnType<SmokeHarness["spawnServe"]> | null = null;
  try {
    const doctor = await h.vsearch(["--data-dir", data, "--json", "doctor"], 120_000, env);
    const store = json(doctor)?.media_store;
    if (
      !check(
        "s3: doctor reaches the bucket with the binary's S3 client; the secret key is never printed",
        store?.kind === "s3" && store.error === null && quiet(doctor),
        `${JSON.stringify(store)}, ${brief(doctor)}`,
      )
    )
      return;
    const acct = await h.vsearch(
      ["--data-dir", data, "--json", "accounts", "create", "--name", "smoke-s3"],
      60_000,
      env,
    );
    const accountId = json(acct)?.id as string | undefined;
    const keys = await h.vsearch(
      ["--data-dir", data, "--json", "keys", "create", "--account", String(accountId), "--name", "smoke-s3"],
      60_000,
      env,
    );
    const key = json(keys)?.key as string | undefined;
    const ffmpeg = readdirSync(join(data, "runtime"))
      .map((v) => join(data, "runtime", v, "ffmpeg"))
      .find(existsSync);
    const clip = join(h.work, "smoke-s3-clip.mp4");
    const gen = ffmpeg
      ? Bun.spawn(
          [
            ffmpeg,
            ...["-hide_banner", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=10:d=3"],
            ...["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", clip],
          ],
          { stdout: "ignore", stderr: "pipe" },
        )
      : null;
    const genCode = gen ? await Promise.race([gen.exited, Bun.sleep(60_000).then(() => "timeout")]) : "no ffmpeg";
    if (!check("s3: an account, a key and a 3 s clip", !!key && genCode === 0, `${brief(acct)}; ffmpeg ${genCode}`))
      return;

    server = h.spawnServe(data, env);
    const base = await h.waitForUrl(server, 60_000);
    if (!check("s3: serve with the media in a bucket prints its URL", base !== null, `exit ${server.exitCode}`)) return;
    const get = h.keyedRequests(base!, key);
    const col = await get("/v1/collections", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "smoke-s3" }),
    });
    const fd = new FormData();
    fd.append("collection_id", String(col.body?.data?.id));
    fd.append("file", Bun.file(clip), "smoke-s3.mp4");
    const up = await get("/v1/upload", { method: "POST", body: fd });
    const { job_id: jobId, video_id: videoId } = up.body?.data ?? {};
    let job: any = null;
    for (let i = 0; i < 600 && !["done", "failed"].includes(job?.status); i++) {
      job = (await get(`/v1/jobs/${jobId}`)).body?.data;
      if (!["done", "failed"].includes(job?.status)) await Bun.sleep(200);
    }
    if (
      !check(
        "s3: the upload is put in the bucket and indexed",
        job?.status === "done",
        JSON.stringify(job)?.slice(0, 300),
      )
    )
      return;
    const video = (await get(`/v1/videos/${videoId}`)).body?.data;
    const link = (url: string) => {
      const u = new URL(url);
      return `${base}${u.pathname}${u.search}`;
    };
    const thumb = await fetch(link(video.thumbnail_url), { redirect: "manual" });
    const where = thumb.headers.get("location") ?? "";
    const jpeg = where ? new Uint8Array(await (await fetch(where)).arrayBuffer()) : new Uint8Array();
    check(
      "s3: the thumbnail link redirects to a presigned URL of the bucket, which serves the JPEG",
      thumb.status === 302 &&
        where.startsWith(`${s3.endpoint}/${s3.bucket}/smoke/videos/${videoId}/poster.jpg?`) &&
        jpeg[0] === 0xff &&
        jpeg[1] === 0xd8,
      `${thumb.status} ${where.slice(0, 120)} (${jpeg.length} B)`,
    );
    const play = await fetch(link(video.playback_url), { redirect: "manual" });
    const ranged = await fetch(play.headers.get("location") ?? "about:blank", {
      headers: { range: "bytes=0-99" },
    }).catch(() => null);
    const body = ranged ? new Uint8Array(await ranged.arrayBuffer()) : new Uint8Array();
    const file = new Uint8Array(await Bun.file(clip).arrayBuffer());
    check(
      "s3: the playback link redirects to the bucket, which answers a byte range",
      play.status === 302 && ranged?.status === 206 && body.length === 100 && body.every((b, i) => b === file[i]),
      `${play.status}, ${ranged?.status}, ${body.length} B`,
    );
  } finally {
    if (server) {
      const code = await h.stopServe(server);
      check("s3: SIGTERM stops the server cleanly", code === 0, `exit ${code}`);
    }
    await s3.stop();
  }
}
