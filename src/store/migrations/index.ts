// Numbered SQL files, imported as text so they are embedded in the compiled binary.
// To add one: create NNN_name.sql and list it here; never edit a migration that has shipped.
import m001 from "./001_core.sql" with { type: "text" };
import m002 from "./002_media.sql" with { type: "text" };
import m003 from "./003_webhooks.sql" with { type: "text" };
import m004 from "./004_search.sql" with { type: "text" };
import m005 from "./005_shot_text.sql" with { type: "text" };
import m006 from "./006_ocr.sql" with { type: "text" };
import m007 from "./007_renditions.sql" with { type: "text" };
import m008 from "./008_content_hash.sql" with { type: "text" };
import m009 from "./009_account_vectors.sql" with { type: "text" };
import m010 from "./010_vector_changes.sql" with { type: "text" };
import m011 from "./011_task_queue.sql" with { type: "text" };
import m012 from "./012_ocr_cjk.sql" with { type: "text" };
import m013 from "./013_people.sql" with { type: "text" };
import m014 from "./014_nodes.sql" with { type: "text" };
import m015 from "./015_cluster_meta.sql" with { type: "text" };
import m016 from "./016_collection_scope.sql" with { type: "text" };

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  { version: 1, name: "core", sql: m001 },
  { version: 2, name: "media", sql: m002 },
  { version: 3, name: "webhooks", sql: m003 },
  { version: 4, name: "search", sql: m004 },
  { version: 5, name: "shot_text", sql: m005 },
  { version: 6, name: "ocr", sql: m006 },
  { version: 7, name: "renditions", sql: m007 },
  { version: 8, name: "content_hash", sql: m008 },
  { version: 9, name: "account_vectors", sql: m009 },
  { version: 10, name: "vector_changes", sql: m010 },
  { version: 11, name: "task_queue", sql: m011 },
  { version: 12, name: "ocr_cjk", sql: m012 },
  { version: 13, name: "people", sql: m013 },
  { version: 14, name: "nodes", sql: m014 },
  { version: 15, name: "cluster_meta", sql: m015 },
  { version: 16, name: "collection_scope", sql: m016 },
];
