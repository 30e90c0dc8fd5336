import type { DeviceChoice } from "../inference/device.ts";
import type { InferenceHost } from "../inference/host.ts";
import type { SignedWeightsDecision } from "../inference/signed-weights.ts";
import type { ActiveModel, ModelCatalog, ModelRole } from "../models/roles.ts";
import type { StoreBackendInfo } from "../store/describe.ts";
import type { StoreCounts, SystemStore } from "./store.ts";

/**
 * What this instance runs with: the model each role uses, the accelerator and the store's size.
 * `doctor` and `reindex` read it here, so commands get answers from a service instead of holding
 * the database or the inference host.
 */
export class SystemService {
  constructor(
    private readonly store: SystemStore,
    private readonly models: ModelCatalog,
    private readonly inference: InferenceHost,
    private readonly backend: StoreBackendInfo,
    /** The database's vector indexes search uses (pgvector's HNSW indexes; none for the in-memory index). */
    private readonly vectorIndexes: () => Promise<
      { name: string; valid: boolean; building: boolean }[]
    > = async () => [],
  ) {}

  /** Where the rows are: the embedded file, or the PostgreSQL server with its versions and migration state. */
  storeBackend(): StoreBackendInfo {
    return this.backend;
  }

  /** What `doctor` lists under the vector index when vector_backend is pgvector. */
  async databaseVectorIndexes(): Promise<{ name: string; valid: boolean; building: boolean }[]> {
    return await this.vectorIndexes();
  }

  activeModel(role: ModelRole): ActiveModel | null {
    return this.models.active(role);
  }

  /** Which device inference runs on, and why (probed once, then remembered). */
  device(): Promise<DeviceChoice> {
    return this.inference.device();
  }

  signedWeights(): SignedWeightsDecision {
    return this.inference.signedWeights();
  }

  async storeCounts(): Promise<StoreCounts> {
    return await this.store.counts();
  }
}
