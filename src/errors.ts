/**
 * A configuration that cannot be used: a config file, a `--weight` flag or a generated config.
 * `problems` holds one line per problem (`<field path>: <what is wrong>, got <value>`). The
 * message prefixes each problem with the source, compiler-style, so every line stands on its own
 * in a terminal or a log, and a single problem is a single line.
 */
export class ConfigError extends Error {
  readonly source: string;
  readonly problems: readonly string[];

  constructor(source: string, problems: readonly string[], options?: ErrorOptions) {
    super(problems.map((problem) => `${source}: ${problem}`).join('\n'), options);
    this.name = 'ConfigError';
    this.source = source;
    this.problems = Object.freeze([...problems]);
  }
}

/** Which listener of a config could not bind: its name, and the path of its listen address (`listeners[2].listen`). */
export interface UnboundListener {
  readonly listener: string;
  readonly field: string;
}

/** A listener that cannot bind, named (`listener`, `field`), so a caller can leave it out and serve the others. */
export class BindError extends Error implements UnboundListener {
  readonly listener: string;
  readonly field: string;
  readonly code: string | undefined;

  constructor(unbound: UnboundListener, message: string, code?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BindError';
    this.listener = unbound.listener;
    this.field = unbound.field;
    this.code = code;
  }
}
