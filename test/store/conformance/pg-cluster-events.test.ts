/**
 * The cross-process event relay (src/events/cluster.ts, issue 26) between two "processes" (two
 * stores, two buses) on one database: what one publishes inside a unit of work reaches the
 * other's subscribers after the commit and never after a rollback, a large deletion arrives whole
 * in notifications under PostgreSQL's payload limit, and a process does not hear its own events
 * twice. (Two real `serve` processes: test/cluster/two-servers.test.ts.)
 */
import { beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../../../src/core/logger.ts";
import { type DomainEvent, EventBus } from "../../../src/events/bus.ts";
import { ClusterEvents } from "../../../src/events/cluster.ts";
import { listen } from "../../../src/store/pg/notify.ts";
import { pgAvailable } from "../../pg/database.ts";
import { until } from "../../helpers/wait.ts";
import { openPg } from "./backends.ts";

type Store = Awaited<ReturnType<typeof openPg>>;

describe.skipIf(!pgAvailable())("domain events across processes", () => {
  const node = (s: Store) => {
    const bus = new EventBus(s.uow);
    const heard: DomainEvent[] = [];
    bus.subscribe("videos.deleted", (e) => void heard.push(e));
    bus.subscribe("video.content_changed", (e) => void heard.push(e));
    const relay = new ClusterEvents(
      s.exec,
      bus,
      { changedAfter: async () => [], gone: async () => [], wake: () => {} },
      createLogger("silent"),
    );
    bus.relayTo(relay);
    return { s, bus, heard, relay };
  };
  let a: ReturnType<typeof node>;
  let b: ReturnType<typeof node>;

  beforeAll(async () => {
    a = node(await openPg());
    b = node(await openPg());
    for (const n of [a, b]) await n.relay.start((ch, h) => listen(n.s.pool, ch, h));
  });

  test("after the commit only, a 400-id deletion whole, and never twice to the publisher", async () => {
    const ids = Array.from({ length: 400 }, (_, i) => `vid_${String(i).padStart(20, "0")}`);
    await expect(
      a.s.uow.run(async () => {
        a.bus.publish({ type: "video.content_changed", videoId: "vid_rolled_back" });
        throw new Error("rollback");
      }),
    ).rejects.toThrow("rollback");
    await a.s.uow.run(async () => {
      a.bus.publish({ type: "videos.deleted", videoIds: ids });
      a.bus.publish({ type: "video.content_changed", videoId: "vid_committed" });
      await a.s.exec.get("SELECT 1");
      expect(b.heard).toEqual([]); // nothing before the commit
    });
    expect(
      await until(() => b.heard.some((e) => e.type === "video.content_changed" && e.videoId === "vid_committed")),
    ).toBe(true);
    const deleted = b.heard.flatMap((e) => (e.type === "videos.deleted" ? e.videoIds : []));
    expect(deleted).toEqual(ids); // in order, every id, over several notifications
    expect(b.heard.filter((e) => e.type === "videos.deleted").length).toBeGreaterThan(1);
    expect(b.heard.some((e) => e.type === "video.content_changed" && e.videoId === "vid_rolled_back")).toBe(false);
    // A delivered its own events once, at its commit; its listener skipped their notifications.
    await Bun.sleep(200);
    expect(a.heard.map((e) => e.type)).toEqual(["videos.deleted", "video.content_changed"]);
    await Promise.all([a.bus.idle(), b.bus.idle()]);
  });
});
