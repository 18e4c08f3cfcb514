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

/** A listener that cannot bind; `field` is the path of its listen address in the config (`listeners[2].listen`). */
export class BindError extends Error {
  readonly field: string;
  readonly code: string | undefined;

  constructor(field: string, message: string, code?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BindError';
    this.field = field;
    this.code = code;
  }
}
