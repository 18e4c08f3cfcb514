// Installs the Debian packages the selected proxies and workloads need, only when missing.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

export const NGINX_STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';

interface Requirement {
  readonly debianPackage: string;
  readonly present: () => boolean;
}

const onPath = (binary: string) => (): boolean =>
  spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;

const REQUIREMENTS = {
  nginx: { debianPackage: 'nginx', present: onPath('nginx') },
  nginxStream: { debianPackage: 'libnginx-mod-stream', present: () => existsSync(NGINX_STREAM_MODULE) },
  haproxy: { debianPackage: 'haproxy', present: onPath('haproxy') },
  iperf3: { debianPackage: 'iperf3', present: onPath('iperf3') },
  wrk: { debianPackage: 'wrk', present: onPath('wrk') },
  sockperf: { debianPackage: 'sockperf', present: onPath('sockperf') },
  dnsperf: { debianPackage: 'dnsperf', present: onPath('dnsperf') },
  knot: { debianPackage: 'knot', present: onPath('knotd') },
} satisfies Record<string, Requirement>;

export type Tool = keyof typeof REQUIREMENTS;

export function ensureInstalled(tools: readonly Tool[]): void {
  const missing = tools
    .map((tool): Requirement => REQUIREMENTS[tool])
    .filter((requirement) => !requirement.present())
    .map((requirement) => requirement.debianPackage);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `missing Debian packages ${missing.join(' ')}; install them as root (apt-get install ${missing.join(' ')})`,
    );
  }
  console.log(`Installing missing Debian packages: ${missing.join(', ')} (apt-get update, then apt-get install -y)`);
  // Inherit stdio so a slow mirror is visible instead of looking like a hang.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
  if (update.status !== 0) throw new Error(`apt-get update failed (exit ${update.status})`);
  const install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], {
    stdio: 'inherit',
    env,
  });
  if (install.status !== 0) throw new Error(`apt-get install ${missing.join(' ')} failed (exit ${install.status})`);
}
