import type { FastifyBaseLogger, FastifyServerOptions } from "fastify";

/** Fastify's type of a child logger factory, which its index does not export by name. */
type ChildLoggerFactory = NonNullable<FastifyServerOptions["childLoggerFactory"]>;

type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal";
type LogMethod = (...args: unknown[]) => void;
type Bindings = Record<string, unknown>;

/** What is read of the parent to tell whether a level would be written; pino has it. */
interface LevelCheck {
  isLevelEnabled?(level: string): boolean;
}

/**
 * A request's logger that makes its child of `parent` (the one carrying the request id) only
 * when something is to be written: a call at a level the parent writes, a level set on it, or a
 * child of it. Why: pino's `child` copies the bindings, serializes them and prepares the
 * redaction for every request, several microseconds of a lone GET's CPU, while at the service's
 * usual level (warn and above, request logging quiet) nearly no request logs a line.
 */
class LazyRequestLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  trace(...args: unknown[]): void {
    this.#write("trace", args);
  }

  debug(...args: unknown[]): void {
    this.#write("debug", args);
  }

  info(...args: unknown[]): void {
    this.#write("info", args);
  }

  warn(...args: unknown[]): void {
    this.#write("warn", args);
  }

  error(...args: unknown[]): void {
    this.#write("error", args);
  }

  fatal(...args: unknown[]): void {
    this.#write("fatal", args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.#made().child(bindings, options);
  }

  #made(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  #write(level: LogLevel, args: unknown[]): void {
    if (this.#child === undefined) {
      const check = (this.#parent as LevelCheck).isLevelEnabled;
      if (check !== undefined && !check.call(this.#parent, level)) return;
    }
    const logger = this.#made();
    (logger[level] as LogMethod).apply(logger, args);
  }
}

/**
 * Fastify's `childLoggerFactory` for request loggers made on first use (see
 * {@link LazyRequestLogger}): every line a request writes carries its bindings (the request id)
 * exactly as the child pino would make at once. Options of a route (its own level or
 * serializers) get the child at once, as Fastify's default factory makes it.
 */
export const lazyRequestLogger: ChildLoggerFactory = function (
  this: unknown,
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: object,
) {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new LazyRequestLogger(logger, bindings) as unknown as FastifyBaseLogger;
};
