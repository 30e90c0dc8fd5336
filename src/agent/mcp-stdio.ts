import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { jsonShape, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../core/json-shape.ts";

export interface LineTransportOptions {
  /** Longest line (one JSON-RPC message) read; the same 1 MiB cap as an HTTP body. */
  maxLineBytes: number;
}

/**
 * MCP over stdio (`vsearch mcp`): one JSON-RPC message per line, as the SDK's StdioServerTransport
 * speaks it, with the guards the HTTP route has. The SDK's transport buffered a line of any length
 * (Buffer.concat per chunk) and, past 10 MB, closed — the process exited without a word — and a
 * line that was not a message was only logged, leaving the client waiting. Here:
 *
 * - a line over `maxLineBytes` is answered at once with a JSON-RPC error (-32600) and the rest of
 *   it, up to the next newline, is dropped unread into memory;
 * - a line nested deeper than the HTTP body guard allows, or with more values, is -32600 before
 *   it is parsed; a line that is not JSON is -32700; JSON that is not a JSON-RPC message is -32600
 *   (with its id when it has one);
 * - a batch (a JSON array) is -32600: the SDK's stdio never took them, and MCP 2025-06-18
 *   removed batching.
 *
 * The process stays up through all of them.
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private parts: Buffer[] = [];
  private size = 0;
  /** Inside a line that went over the limit (already answered): drop bytes until its newline. */
  private skipping = false;
  private closed = false;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly o: LineTransportOptions,
  ) {}

  async start(): Promise<void> {
    this.input.on("data", this.onData);
    this.input.on("error", this.onInputError);
    this.input.on("end", this.onEnd);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return;
    const text = `${JSON.stringify(message)}\n`;
    if (!this.output.write(text)) await new Promise<void>((resolve) => this.output.once("drain", resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off("data", this.onData);
    this.input.off("error", this.onInputError);
    this.input.off("end", this.onEnd);
    this.parts = [];
    this.onclose?.();
  }

  private readonly onInputError = (e: Error) => this.onerror?.(e);
  private readonly onEnd = () => void this.close();

  private readonly onData = (chunk: Buffer | string) => {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      const piece = buf.subarray(start, nl < 0 ? buf.length : nl);
      if (!this.skipping) {
        if (this.size + piece.length > this.o.maxLineBytes) {
          this.parts = [];
          this.size = 0;
          this.skipping = true;
          this.reply(
            null,
            -32600,
            `Invalid Request: a message may be at most ${this.o.maxLineBytes} bytes; this line was dropped`,
          );
        } else if (piece.length) {
          this.parts.push(piece);
          this.size += piece.length;
        }
      }
      if (nl < 0) return;
      if (this.skipping) this.skipping = false;
      else {
        const line = Buffer.concat(this.parts).toString("utf8");
        this.parts = [];
        this.size = 0;
        this.handleLine(line.endsWith("\r") ? line.slice(0, -1) : line);
      }
      start = nl + 1;
    }
  };

  private handleLine(line: string): void {
    if (line.trim() === "") return;
    const shape = jsonShape(line, MAX_JSON_DEPTH, MAX_JSON_VALUES);
    if (shape.depth > MAX_JSON_DEPTH)
      return this.reply(null, -32600, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (shape.values > MAX_JSON_VALUES)
      return this.reply(null, -32600, `Invalid Request: JSON with more than ${MAX_JSON_VALUES} values`);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return this.reply(null, -32700, "Parse error: the line is not JSON");
    }
    if (Array.isArray(value))
      return this.reply(null, -32600, "Invalid Request: batches are not accepted over stdio; send one message a line");
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = (value as { id?: unknown } | null)?.id;
      return this.reply(
        typeof id === "string" || typeof id === "number" ? id : null,
        -32600,
        "Invalid Request: not a JSON-RPC 2.0 message",
      );
    }
    this.onmessage?.(parsed.data);
  }

  private reply(id: string | number | null, code: number, message: string): void {
    void this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage).catch((e) =>
      this.onerror?.(e as Error),
    );
  }
}
