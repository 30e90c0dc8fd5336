import { type BackupResult, createBackup } from "./backup.ts";
import { type CheckOptions, checkWith, type IntegrityReport } from "./integrity.ts";
import type { ObjectStore } from "../media/object-store.ts";
import type { BackupStore } from "./store.ts";

/**
 * Backup and the data dir's health check, built by createApp so commands ask a service instead of
 * holding the database. The snapshot itself needs the live store (`VACUUM INTO` reads a
 * consistent view while `serve` keeps writing through its own connection).
 */
export class BackupService {
  constructor(
    private readonly store: BackupStore,
    private readonly o: {
      dataDir: string;
      mediaRoot: string;
      secretFile: string;
      modelsDir: string;
      vecExtension?: string;
      /** PostgreSQL mode: the archive carries files and registry; the rows are pg_dump's. */
      databaseUrl?: string;
      version: string;
      /** The media's bucket (`s3_bucket`), with its description: checked by `check`, left out of backups. */
      bucket?: { store: ObjectStore; description: string } | null;
    },
  ) {}

  create(opts: {
    out: string;
    includeModels: boolean;
    onProgress?: (done: number, total: number, what: string) => void;
  }): Promise<BackupResult> {
    return createBackup({
      ...this.o,
      mediaInBucket: this.o.bucket?.description,
      store: this.store,
      out: opts.out,
      includeModels: opts.includeModels,
      onProgress: opts.onProgress,
    });
  }

  async check(opts: CheckOptions = {}): Promise<IntegrityReport> {
    return await checkWith(this.store, this.o.mediaRoot, { ...opts, bucket: this.o.bucket?.store ?? null });
  }
}
