/**
 * What every echo-basic server says about where it runs, from the env the image reads (NAMESPACE,
 * INGRESS_NAME, SERVICE_NAME, POD_NAME), and the address it binds: ECHO_BASIC_BIND, the pod's own address
 * (images.ts sets it), where the image binds `:port` in its own network namespace.
 */
export interface PodContext {
  readonly namespace: string;
  readonly ingress: string;
  readonly service: string;
  readonly pod: string;
}

export function podContext(env: NodeJS.ProcessEnv): PodContext {
  return {
    namespace: env.NAMESPACE ?? '',
    ingress: env.INGRESS_NAME ?? '',
    service: env.SERVICE_NAME ?? '',
    pod: env.POD_NAME ?? '',
  };
}

export function bindAddress(env: NodeJS.ProcessEnv): string {
  return env.ECHO_BASIC_BIND ?? '127.0.0.1';
}

/** A port from `name` (else `fallback`); the image refuses a non-integer the same way. */
export function portFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port)) throw new Error(`non-integer value in ${name}: ${raw}`);
  return port;
}
