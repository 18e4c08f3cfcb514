// deploy/Dockerfile without a Docker engine: its stages are read from the file itself and replayed
// on this machine — the build stage's commands (`npm ci`, the bundle) in a temporary folder holding
// what the build context lets through, then the final stage's copies and entrypoint on Node 26 —
// so the image's command, and the command the Deployment gives it, are proven to start from the
// bundle alone.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { DEFAULT_ADMIN_PORT } from '../../src/defaults.ts';
import { KIND } from '../../src/api/names.ts';
import { renderProxy } from '../../src/manager/render.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';
import { freePort } from '../support/net/free-ports.ts';
import { TYPE_STRIPPER_PROBE } from '../support/process/type-stripper-probe.ts';
import { theOnly } from './manifests.ts';
import { argDefault, instructions, readDockerfile, runtimeOf, type Stage } from '../support/process/dockerfile.ts';

const run = promisify(execFile);
const projectDir = fileURLToPath(new URL('../../', import.meta.url));

/** COPY sources taken from the build context (not from another stage). */
function contextSources(stage: Stage): string[] {
  return instructions(stage, 'COPY')
    .filter((argument) => !argument.startsWith('--from'))
    .flatMap((argument) => argument.split(/\s+/).slice(0, -1));
}

/** Whether .dockerignore lets a path into the build context (last matching pattern wins, `!` re-includes). */
function inBuildContext(path: string): boolean {
  const patterns = readFileSync(join(projectDir, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  let included = true;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const glob = (negated ? pattern.slice(1) : pattern).replace(/\/$/, '');
    if (path === glob || path.startsWith(`${glob}/`) || (glob === '*' && !path.includes('/'))) included = negated;
  }
  return included;
}

const { globalArgs, stages } = readDockerfile();
const finalStage = stages.at(-1);
const buildStage = stages.find(
  (stage) =>
    stage.name !== undefined &&
    instructions(finalStage, 'COPY').some((copy) => copy.startsWith(`--from=${stage.name} `)),
);
/** The final stage's copies from the build stage: [from, to] under /app. */
const fromBuild = instructions(finalStage, 'COPY')
  .filter((copy) => copy.startsWith(`--from=${buildStage?.name} `))
  .map((copy) => copy.split(/\s+/).slice(1) as [string, string]);
const { entrypoint, env: imageEnv } = runtimeOf(finalStage);
/** What runs after tini: `node <entry>`. */
const nodeCommand = entrypoint.slice(entrypoint.indexOf('--') + 1);

describe('deploy/Dockerfile', () => {
  it('builds on the official image of the Node the project pins and tests on (the `node` dev dependency), in stages', () => {
    assert.ok(stages.length >= 2, 'a build stage and a final stage');
    const packageJson = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')) as {
      devDependencies: { node: string };
    };
    const pinnedMajor = /\d+/.exec(packageJson.devDependencies.node)?.[0];
    assert.match(globalArgs.get('NODE_IMAGE') ?? '', new RegExp(`^node:${pinnedMajor}[-.]`));
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's ARG reference, as written
    for (const stage of stages) assert.equal(stage.from, '${NODE_IMAGE}');
  });

  it('runs as a numeric non-root user, the one the Deployment runs as', () => {
    const [user = ''] = instructions(finalStage, 'USER');
    const [uid = ''] = user.split(':');
    assert.match(uid, /^[1-9]\d*$/, 'numeric, so that runAsNonRoot can verify it');
    for (const deployment of [
      theOnly<V1Deployment>('Deployment'),
      theOnly<V1Deployment>('Deployment', 'standalone/'),
    ]) {
      assert.equal(deployment.spec?.template.spec?.securityContext?.runAsUser, Number(uid));
    }
  });

  it('starts under tini, which passes SIGTERM on to node', () => {
    assert.equal(entrypoint[0], '/usr/bin/tini');
    assert.ok(instructions(finalStage, 'RUN').some((command) => /apt-get install .*\btini\b/.test(command)));
    assert.deepEqual(nodeCommand.slice(0, 1), ['node']);
  });

  it('exposes the admin port and carries OCI labels, versioned as package.json', () => {
    assert.deepEqual(instructions(finalStage, 'EXPOSE'), [String(DEFAULT_ADMIN_PORT)]);
    const labels = instructions(finalStage, 'LABEL').join(' ');
    for (const key of ['title', 'description', 'licenses', 'version', 'revision'])
      assert.match(labels, new RegExp(`org\\.opencontainers\\.image\\.${key}=`));
    const version = instructions(finalStage, 'ARG')
      .map(argDefault)
      .find(([name]) => name === 'VERSION')?.[1];
    const packageJson = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')) as { version: string };
    assert.equal(version, packageJson.version);
  });

  it('copies only what .dockerignore lets into the build context', () => {
    const sources = stages.flatMap(contextSources);
    assert.ok(sources.length > 0);
    for (const source of sources)
      assert.ok(inBuildContext(source.replace(/^\.\//, '')), `${source} is excluded by .dockerignore`);
    for (const excluded of ['node_modules', '.git', 'test', 'bench'])
      assert.equal(inBuildContext(excluded), false, `${excluded} reaches the build context`);
  });

  describe('replayed: the build, then the entrypoint', { timeout: 120_000 }, () => {
    let buildDir: string;
    let imageDir: string;
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
    const start = (args: string[]) =>
      run(process.execPath, [...nodeCommand.slice(1), ...args], {
        cwd: imageDir,
        env: { ...env, ...imageEnv },
        timeout: 30_000,
      });

    before(async () => {
      buildDir = await mkdtemp(join(tmpdir(), 'canary-l4 build-'));
      imageDir = await mkdtemp(join(tmpdir(), 'canary-l4 image-'));
      for (const source of contextSources(buildStage!))
        await cp(join(projectDir, source), join(buildDir, source), { recursive: true });
      const [install = '', bundle = ''] = instructions(buildStage, 'RUN');
      const [npm = '', ...npmArgs] = install.split(/\s+/);
      assert.deepEqual([npm, npmArgs[0]], ['npm', 'ci']);
      // --prefer-offline: the packages come from the local npm cache when it has them.
      await run(npm, [...npmArgs, '--prefer-offline'], { cwd: buildDir, env, timeout: 100_000 });
      const [node = '', ...bundleArgs] = bundle.split(/\s+/);
      assert.equal(node, 'node');
      await run(process.execPath, bundleArgs, { cwd: buildDir, env, timeout: 60_000 });
      for (const source of contextSources(finalStage!))
        await cp(join(projectDir, source), join(imageDir, source), { recursive: true });
      for (const [from, to] of fromBuild)
        await cp(join(buildDir, from.replace(/^\/app\//, '')), join(imageDir, to), { recursive: true });
    });
    after(async () => {
      await rm(buildDir, { recursive: true, force: true });
      await rm(imageDir, { recursive: true, force: true });
    });

    it('holds the bundle alone: no node_modules, no sources', async () => {
      const held = await readdir(imageDir);
      assert.ok(
        held.includes('dist') && existsSync(join(imageDir, 'dist', 'canary-l4.js')),
        `the image holds ${held.join(' ')}`,
      );
      assert.ok(!held.includes('node_modules') && !held.includes('src'), `the image holds ${held.join(' ')}`);
    });

    it("fills Node's compile cache at build with the bundle's chunks; the bundle never loads the type stripper", async () => {
      const cacheSetting = instructions(finalStage, 'ENV').find((setting) => setting.startsWith('NODE_COMPILE_CACHE='));
      assert.ok(cacheSetting !== undefined, 'the image sets NODE_COMPILE_CACHE');
      const cacheDir = cacheSetting.slice('NODE_COMPILE_CACHE='.length).replace(/^\/app\b/, imageDir);
      const [node = '', ...warm] =
        instructions(finalStage, 'RUN')
          .find((command) => command.includes('warm-compile-cache'))
          ?.split(/\s+/) ?? [];
      assert.equal(node, 'node');
      const cached = { ...env, ...imageEnv, NODE_COMPILE_CACHE: cacheDir };
      await run(process.execPath, warm, { cwd: imageDir, env: cached, timeout: 60_000 });
      const demo = async (processEnv: NodeJS.ProcessEnv) => {
        const [tcp, udp] = [await freePort(), await freePort()];
        const args = [
          'demo',
          '--exit',
          '--connections',
          '5',
          '--sessions',
          '2',
          '--tcp-port',
          String(tcp),
          '--udp-port',
          String(udp),
          '--admin-port',
          '0',
        ];
        const { stderr } = await run(
          process.execPath,
          ['--import', TYPE_STRIPPER_PROBE, ...nodeCommand.slice(1), ...args],
          { cwd: imageDir, env: processEnv, timeout: 30_000 },
        );
        return stderr;
      };
      assert.ok((await readdir(cacheDir, { recursive: true })).length > 1, 'the cache holds the compiled chunks');
      assert.match(await demo(cached), /^type stripper loaded: false$/m);
      // JavaScript throughout: without a cache to read either.
      assert.match(await demo({ ...env, ...imageEnv }), /^type stripper loaded: false$/m);
    });

    it('`--help` prints the commands', async () => {
      const { stdout } = await start(['--help']);
      for (const command of ['serve', 'proxy', 'manager', 'demo'])
        assert.match(stdout, new RegExp(`canary-l4 ${command}\\b`));
    });

    it('puts the kubectl plugin of package.json on PATH, and it runs from the bundle', async () => {
      const linked = instructions(finalStage, 'RUN')
        .map((command) => /\bln -s \/app\/(\S+) \/usr\/local\/bin\/kubectl-canary_l4$/.exec(command)?.[1])
        .find(Boolean);
      const packageJson = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')) as {
        bin: Record<string, string>;
      };
      assert.equal(linked, packageJson.bin['kubectl-canary_l4']);
      const { stdout } = await run(process.execPath, [join(imageDir, linked!), '--help'], {
        cwd: imageDir,
        env: { ...env, ...imageEnv },
        timeout: 30_000,
      });
      for (const command of ['status', 'promote', 'pause', 'resume', 'abort', 'set-weight', 'plan'])
        assert.match(stdout, new RegExp(`kubectl canary-l4 ${command}\\b`));
    });

    // The manager's Deployment, and the proxies: standalone, and as the manager renders them.
    const example = theOnly<ManagedRelease>(KIND);
    const rendered = renderProxy(
      { ...example, metadata: { ...example.metadata, namespace: 'default', uid: 'uid-1' } },
      { proxyImage: 'canary-l4:0.1.0' },
    );
    const deployments: [string, V1Deployment | undefined, RegExp][] = [
      ['deploy/manager-deployment.yaml', theOnly<V1Deployment>('Deployment'), /--proxy-image/],
      ['deploy/standalone/deployment.yaml', theOnly<V1Deployment>('Deployment', 'standalone/'), /--canary-release/],
      ["the manager's proxy Deployment", rendered.ok ? rendered.objects.deployment : undefined, /--canary-release/],
    ];
    for (const [what, deployment, flag] of deployments) {
      it(`accepts the command and flags ${what} gives it`, async () => {
        const args = deployment?.spec?.template.spec?.containers[0]?.args ?? [];
        const result = await start([...args, '--help']).then(
          ({ stdout }) => ({ ok: true, output: stdout }),
          (err: { stderr?: string }) => ({ ok: false, output: err.stderr ?? String(err) }),
        );
        assert.ok(result.ok, `\`canary-l4 ${args.join(' ')}\` is refused: ${result.output}`);
        assert.match(result.output, flag);
      });
    }
  });
});
