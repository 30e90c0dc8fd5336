// Setup file of the `pg` vitest project: this test file's own database (test/pg/database.ts).
import { setUpTestDatabase } from "./database.ts";

await setUpTestDatabase();
