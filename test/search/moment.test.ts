import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addVideo,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  type SearchTestApp,
  startSearchApp,
  type Tenant,
} from "./helpers.ts";

/** GET /v1/videos/{id}/moment: the shot covering a time, with what is known about it. */
let t: SearchTestApp;
let a: Tenant;
let vid: string;
let bare: string;

const moment = (id: string, q: string, token = a.readOnlyKey) =>
  t.request("GET", `/v1/videos/${id}/moment${q}`, { token });

beforeAll(async () => {
  t = await startSearchApp({ embedder: new HandEmbedder({}) });
  a = await createTenant(t);
  const col = await createCollection(t, a.accountId, "Clips");
  vid = await addVideo(t, a.accountId, col, { duration: 20 });
  writeFileSync(join(t.dir, "videos", vid, "shots", "0.jpg"), new Uint8Array([0xff, 0xd8, 0xff, 0xd9]));
  await indexVideo(t, vid, {
    shots: [
      {
        shotIndex: 0,
        start: 0,
        end: 8,
        labels: [
          { label: "car", score: 0.7 },
          { label: "road", score: 0.2 },
        ],
        caption: "a red car on a road",
        thumbnailPath: `videos/${vid}/shots/0.jpg`,
      },
      { shotIndex: 1, start: 8, end: 20 },
    ],
    transcript: [
      { start: 1, end: 4, text: "Here it comes." },
      { start: 6.5, end: 9, text: "Right past the camera." },
      { start: 15, end: 17, text: "And it is gone." },
    ],
  });
  bare = await addVideo(t, a.accountId, col, { duration: 30 });
  await indexVideo(t, bare, { transcript: [{ start: 10, end: 12, text: "No shots were stored for this one." }] });
});

afterAll(async () => t?.close());

describe("moment", () => {
  it("describes the shot covering the time: caption, labels, what is said during it, span, thumbnail", async () => {
    const res = await moment(vid, "?timestamp=3.5");
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data).toMatchObject({
      video_id: vid,
      timestamp: 3.5,
      caption: "a red car on a road",
      labels: ["car", "road"],
      transcript: "Here it comes. Right past the camera.",
      scene_start: 0,
      scene_end: 8,
    });
    expect(data.thumbnail_url).toMatch(new RegExp(`/media/videos/${vid}/shots/0\\.jpg\\?expires=`));
  });

  it("empty fields are normal: a shot with no caption, labels or thumbnail", async () => {
    const { data } = await (await moment(vid, "?timestamp=8")).json();
    expect(data).toMatchObject({
      caption: null,
      labels: [],
      transcript: "Right past the camera. And it is gone.",
      scene_start: 8,
      scene_end: 20,
      thumbnail_url: null,
    });
    // The end of the video belongs to the last shot.
    expect((await (await moment(vid, "?timestamp=20")).json()).data.scene_start).toBe(8);
  });

  it("a video without shots answers with the transcript around the time", async () => {
    const { data } = await (await moment(bare, "?timestamp=11")).json();
    expect(data).toMatchObject({
      caption: null,
      labels: [],
      transcript: "No shots were stored for this one.",
      scene_start: null,
      scene_end: null,
      thumbnail_url: null,
    });
    expect((await (await moment(bare, "?timestamp=25")).json()).data.transcript).toBeNull();
  });

  it("bad timestamps are 422 on query.timestamp; unknown video 404", async () => {
    for (const q of ["", "?timestamp=", "?timestamp=abc", "?timestamp=-1", "?timestamp=20.5", "?timestamp=Infinity"]) {
      const res = await moment(vid, q);
      expect(res.status, q).toBe(422);
      expect((await res.json()).detail[0].loc, q).toEqual(["query", "timestamp"]);
    }
    const res = await moment("vid_doesnotexist00000000", "?timestamp=1");
    expect(res.status).toBe(404);
    expect((await res.json()).detail.code).toBe("VIDEO_NOT_FOUND");
  });
});
