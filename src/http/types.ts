import type { Logger } from "../core/logger.ts";
import type { Principal } from "../auth/schema.ts";

export interface AppEnv {
  Variables: {
    requestId: string;
    startedAt: number;
    log: Logger;
    principal: Principal;
    /** The caller's network address as the rate limiter counts it (http/client-address.ts). */
    clientAddress: string;
  };
}
