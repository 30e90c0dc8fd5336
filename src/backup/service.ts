import type { Database } from "bun:sqlite";
import { type BackupResult, createBackup } from "./backup.ts";
import { checkWith, type IntegrityReport } from "./integrity.ts";

/**
 * Backup and the data dir's health check, built by createApp so commands ask a service instead of
 * holding the database. The snapshot itself needs the live connection (`VACUUM INTO` reads a
 * consistent view while `serve` keeps writing through its own).
 */
export class BackupService {
  constructor(
    private readonly db: Database,
    private readonly o: { dataDir: string; modelsDir: string; vecExtension?: string; version: string },
  ) {}

  create(opts: { out: string; includeModels: boolean; onProgress?: (done: number, total: number, what: string) => void }): Promise<BackupResult> {
    return createBackup({ ...this.o, db: this.db, out: opts.out, includeModels: opts.includeModels, onProgress: opts.onProgress });
  }

  check(): IntegrityReport {
    return checkWith(this.db, this.o.dataDir);
  }
}
