/** Where the Gateway API CRDs come from: the Go module cache, and a clear line when Go is missing. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, it } from 'node:test';
import { GATEWAY_API_VERSION, gatewayApiCrdFiles, gatewayApiModuleDir } from './crds.ts';

describe('gateway-api/crds.ts', () => {
  it('lists a channel’s CRDs and its safe-upgrades policy, absolute paths into the module cache', async () => {
    const dir = await gatewayApiModuleDir();
    assert.ok(dir.endsWith(`sigs.k8s.io/gateway-api@${GATEWAY_API_VERSION}`), dir);
    const standard = await gatewayApiCrdFiles('standard');
    assert.ok(standard.every((file) => file.startsWith(`${dir}/config/crd/standard/`) && existsSync(file)));
    const names = standard.map((file) => basename(file));
    for (const kind of ['gatewayclasses', 'gateways', 'referencegrants', 'tcproutes', 'udproutes', 'vap_safeupgrades'])
      assert.ok(names.includes(`gateway.networking.k8s.io_${kind}.yaml`), kind);
    assert.ok(!names.includes('kustomization.yaml'));
    const experimental = (await gatewayApiCrdFiles('experimental')).map((file) => basename(file));
    assert.ok(experimental.includes('gateway.networking.x-k8s.io_xbackends.yaml'));
  });

  it('without go on PATH, one line saying to install it', async () => {
    await assert.rejects(
      gatewayApiModuleDir({ PATH: '/nonexistent' }),
      new Error(
        `the Gateway API CRDs are read from sigs.k8s.io/gateway-api@${GATEWAY_API_VERSION} in the Go module cache: install Go (go on PATH)`,
      ),
    );
  });
});
