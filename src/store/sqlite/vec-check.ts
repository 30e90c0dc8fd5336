import { Database } from "bun:sqlite";

export interface VecCheck {
  sqlite_version: string;
  vec_version: string;
  vec_query_ok: boolean;
  error?: string;
}

/**
 * `vsearch doctor`'s sqlite-vec check (runtime/self-test.ts): loads the extension into an
 * in-memory database and runs a real vec0 query. Three vectors, a k=2 MATCH query for
 * [1,0,0,0]: sqlite-vec must answer rowid 1 (distance 0) then rowid 3 (distance √0.02), never
 * rowid 2. Vectors go in as float32 blobs, the way the stores write them. It lives in store/
 * because it opens a database (only store modules hold bun:sqlite).
 */
export function checkVecExtension(vecExtension: string): VecCheck {
  const db = new Database(":memory:");
  try {
    db.loadExtension(vecExtension);
    const v = db.query<{ s: string; v: string }, []>("SELECT sqlite_version() AS s, vec_version() AS v").get()!;
    db.exec("CREATE VIRTUAL TABLE t USING vec0(embedding float[4])");
    const put = db.query("INSERT INTO t(rowid, embedding) VALUES (?, ?)");
    const rows: [number, number[]][] = [
      [1, [1, 0, 0, 0]],
      [2, [0, 1, 0, 0]],
      [3, [0.9, 0.1, 0, 0]],
    ];
    for (const [id, vec] of rows) put.run(id, new Uint8Array(new Float32Array(vec).buffer));
    const got = db
      .query<{ rowid: number; distance: number }, [Uint8Array]>(
        "SELECT rowid, distance FROM t WHERE embedding MATCH ? AND k = 2 ORDER BY distance",
      )
      .all(new Uint8Array(new Float32Array([1, 0, 0, 0]).buffer));
    const ok =
      got.length === 2 &&
      got[0].rowid === 1 &&
      got[1].rowid === 3 &&
      Math.abs(got[0].distance) < 1e-6 &&
      Math.abs(got[1].distance - Math.sqrt(0.02)) < 1e-4;
    return {
      sqlite_version: v.s,
      vec_version: v.v,
      vec_query_ok: ok,
      error: ok ? undefined : `vec0 KNN query returned ${JSON.stringify(got)}`,
    };
  } finally {
    db.close();
  }
}
