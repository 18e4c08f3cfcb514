// The TCP data plane's tests again, on the net.Socket path (CANARY_L4_TCP_FAST_PATH=false, read by
// the test planes and by the serve children as the CLI's --no-tcp-fast-path): the path
// every listener takes where the runtime lacks the fast path's internals, and mirroring listeners,
// backends named by host name, failOnReset and firstByteTimeoutMs always. The other files run them
// on the fast path, the default.
process.env.CANARY_L4_TCP_FAST_PATH = 'false';
await import('./listener.test.ts');
await import('./faults.test.ts');
await import('./graceful-end.test.ts');
await import('../flows/lifetimes.test.ts');
