// Gateway API's conformance suite (sigs.k8s.io/gateway-api/conformance v1.6.3) for what canary-l4 implements:
// the GATEWAY-TCP and GATEWAY-UDP profiles, i.e. every TCPRoute* and UDPRoute* test, plus the core Gateway tests
// that need no HTTP listener. test/conformance/run.ts builds this once (`go test -c`) and runs it against a
// cluster with canary-l4 installed; it takes the suite's own flags (conformance/utils/flags), of which these matter:
//
//	-gateway-class NAME   the GatewayClass under test (else $CONFORMANCE_GATEWAY_CLASS, else canary-l4)
//	-report-output FILE   where the ConformanceReport YAML goes (else $CONFORMANCE_REPORT)
//	-version V            canary-l4's version in the report (else $CONFORMANCE_IMPLEMENTATION_VERSION)
//
// The kubeconfig is the usual one (-kubeconfig, else $KUBECONFIG).
//
// TestL4BaseManifests needs nothing; TestEchoSimulation dials test/cluster/node/echo-basic.ts's servers with the
// suite's own clients (test/conformance/echo-basic.test.ts starts them and sets $ECHO_SIMULATION_*).
package conformance_test

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/conformance/utils/tcp"
	"sigs.k8s.io/gateway-api/conformance/utils/udp"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"
)

// What canary-l4 claims. ReferenceGrant is core in both profiles (the profiles add it anyway); no Gateway-level
// extended feature is claimed: GatewayPort8080 and GatewayHTTPListenerIsolation are HTTP, and static addresses,
// infrastructure labels and empty addresses are not in canary-l4's Gateway contract.
var supportedFeatures = []features.FeatureName{
	features.SupportGateway,
	features.SupportReferenceGrant,
	features.SupportTCPRoute,
	features.SupportUDPRoute,
}

var profiles = []suite.ConformanceProfileName{
	suite.GatewayTCPConformanceProfileName,
	suite.GatewayUDPConformanceProfileName,
}

// The core Gateway tests that need no HTTP listener: run too.
var gatewayTestsWithoutHTTP = sets.New("GatewayClassObservedGenerationBump")

// The tests the claimed features would select that cannot pass on an L4-only implementation, and why. They are
// skipped (the report lists them as skipped, so the profiles' core result is Partial, as it honestly is).
var needHTTP = map[string]string{
	"GatewayListenerUnsupportedProtocol":        "expects its HTTP listener Accepted beside the invalid one",
	"GatewayInvalidRouteKind":                   "its Gateways have only HTTP listeners",
	"GatewayInvalidTLSConfiguration":            "its Gateways have only HTTPS listeners",
	"GatewayModifyListeners":                    "its Gateways have HTTP and HTTPS listeners, and HTTPRoutes",
	"GatewayObservedGenerationBump":             "its Gateway has only an HTTP listener, which must be Accepted",
	"TCPRouteInvalidNonTCPListener":             "its Gateway has only an HTTP listener, and the suite waits for it to be Accepted and Programmed first, which GatewayListenerUnsupportedProtocol forbids an implementation without HTTP",
	"GatewaySecretInvalidReferenceGrant":        "an HTTPS listener's certificateRefs",
	"GatewaySecretMissingReferenceGrant":        "an HTTPS listener's certificateRefs",
	"GatewaySecretReferenceGrantAllInNamespace": "an HTTPS listener's certificateRefs",
	"GatewaySecretReferenceGrantSpecific":       "an HTTPS listener's certificateRefs",
}

// The suite's base manifests as canary-l4 runs them, under this path of overlayFS (the suite reads a path from
// every FS it is given and joins what it finds, so the overlay uses a path of its own).
const baseManifests = "canary-l4/base-manifests.yaml"

// A Gateway annotated so is not waited for by NamespacesMustBeReady (the suite's own mechanism for Gateways
// "NOT expected to be Accepted or Provisioned in its default state").
const readinessSkip = kubernetes.GatewayExcludedFromReadinessChecks

func TestConformance(t *testing.T) {
	// run.ts reads these two kinds of line, first: what is claimed, run or not (a setup that fails runs none).
	claimed, skipped := selection(t)
	for _, name := range claimed {
		t.Logf("canary-l4: claims %s", name)
	}
	for _, name := range skipped {
		t.Logf("canary-l4: skipping %s: needs HTTP: %s", name, needHTTP[name])
	}
	opts := conformance.DefaultOptions(t)
	if !flagSet("gateway-class") {
		opts.GatewayClassName = envOr("CONFORMANCE_GATEWAY_CLASS", "canary-l4")
	}
	if opts.ReportOutputPath == "" {
		opts.ReportOutputPath = os.Getenv("CONFORMANCE_REPORT")
	}
	opts.Implementation.Organization = orDefault(opts.Implementation.Organization, "canary-l4")
	opts.Implementation.Project = orDefault(opts.Implementation.Project, "canary-l4")
	opts.Implementation.URL = orDefault(opts.Implementation.URL, "https://canary-l4.io")
	opts.Implementation.Version = orDefault(opts.Implementation.Version, envOr("CONFORMANCE_IMPLEMENTATION_VERSION", "dev"))
	if len(opts.Implementation.Contact) == 0 {
		opts.Implementation.Contact = []string{"CONTRIBUTING.md of the canary-l4 repository"}
	}
	opts.SupportedFeatures = supportedFeatures
	opts.ConformanceProfiles = profiles
	opts.SkipTests = skipped

	base, err := l4BaseManifests(conformance.Manifests)
	if err != nil {
		t.Fatalf("the suite's base/manifests.yaml: %v", err)
	}
	opts.BaseManifests = baseManifests
	opts.ManifestFS = []fs.FS{&conformance.Manifests, fstest.MapFS{baseManifests: &fstest.MapFile{Data: base}}}

	conformance.RunConformanceWithOptions(t, opts)
}

// selection is the tests run (TCPRoute*, UDPRoute* but needHTTP's, gatewayTestsWithoutHTTP) and those skipped (needHTTP's),
// after checking that every test the claimed features select is one or the other: a new test in a later suite
// must be looked at, not run or skipped by accident.
func selection(t *testing.T) (claimed, skipped []string) {
	supported := sets.New(supportedFeatures...)
	for _, test := range tests.ConformanceTests {
		if !supported.HasAll(test.Features...) {
			continue
		}
		_, skip := needHTTP[test.ShortName]
		run := !skip && (strings.HasPrefix(test.ShortName, "TCPRoute") || strings.HasPrefix(test.ShortName, "UDPRoute")) ||
			gatewayTestsWithoutHTTP.Has(test.ShortName)
		switch {
		case skip && run:
			t.Fatalf("%s is both run and skipped: fix needHTTP or gatewayTestsWithoutHTTP", test.ShortName)
		case skip:
			skipped = append(skipped, test.ShortName)
		case run:
			claimed = append(claimed, test.ShortName)
		default:
			t.Fatalf("%s (features %v) is selected by the claimed features but neither run nor skipped: "+
				"add it to gatewayTestsWithoutHTTP or to needHTTP with the reason", test.ShortName, test.Features)
		}
	}
	for name := range needHTTP {
		if !slices.Contains(skipped, name) {
			t.Fatalf("needHTTP names %s, which the suite does not have (or the claimed features do not select)", name)
		}
	}
	return claimed, skipped
}

// l4BaseManifests is the suite's base/manifests.yaml with each Gateway that has no TCP or UDP listener (the base
// Gateways for the HTTP tests: HTTP and HTTPS listeners only) annotated as excluded from the readiness checks. An
// L4-only implementation must not accept them (a Gateway with no accepted listener is Accepted=False), and the
// suite waits for every Gateway of its namespaces to be Accepted and Programmed before each TCP and UDP test.
// Everything else is the suite's text unchanged.
func l4BaseManifests(manifests fs.FS) ([]byte, error) {
	raw, err := fs.ReadFile(manifests, "base/manifests.yaml")
	if err != nil {
		return nil, err
	}
	docs := strings.Split(string(raw), "\n---\n")
	for i, doc := range docs {
		var object map[string]any
		if err := yaml.Unmarshal([]byte(doc), &object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if object["kind"] != "Gateway" || hasL4Listener(object) {
			continue
		}
		metadata, _ := object["metadata"].(map[string]any)
		annotations, _ := metadata["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
		}
		annotations[readinessSkip] = "true"
		metadata["annotations"] = annotations
		out, err := yaml.Marshal(object)
		if err != nil {
			return nil, err
		}
		docs[i] = string(bytes.TrimSpace(out))
	}
	return []byte(strings.Join(docs, "\n---\n")), nil
}

func hasL4Listener(gateway map[string]any) bool {
	spec, _ := gateway["spec"].(map[string]any)
	listeners, _ := spec["listeners"].([]any)
	for _, listener := range listeners {
		entry, _ := listener.(map[string]any)
		if protocol := entry["protocol"]; protocol == "TCP" || protocol == "UDP" {
			return true
		}
	}
	return false
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func orDefault(value, fallback string) string {
	if value != "" {
		return value
	}
	return fallback
}

func TestL4BaseManifests(t *testing.T) {
	out, err := l4BaseManifests(conformance.Manifests)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := fs.ReadFile(conformance.Manifests, "base/manifests.yaml")
	annotated := map[string]bool{}
	kinds := map[string]int{}
	for doc := range strings.SplitSeq(string(out), "\n---\n") {
		var object struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &object); err != nil {
			t.Fatal(err)
		}
		kinds[object.Kind]++
		if object.Kind == "Gateway" {
			annotated[object.Metadata.Name] = object.Metadata.Annotations[readinessSkip] == "true"
		}
	}
	want := map[string]bool{"same-namespace": true, "same-namespace-with-https-listener": true, "all-namespaces": true,
		"backend-namespaces": true}
	if fmt.Sprint(annotated) != fmt.Sprint(want) {
		t.Errorf("base Gateways annotated %v, want %v", annotated, want)
	}
	if got, want := strings.Count(string(out), "\n---\n"), strings.Count(string(raw), "\n---\n"); got != want {
		t.Errorf("%d documents out of %d", got+1, want+1)
	}
	if kinds["Deployment"] == 0 || kinds["Service"] == 0 {
		t.Errorf("the backends are missing: %v", kinds)
	}
	tcpGateway := map[string]any{"kind": "Gateway", "spec": map[string]any{"listeners": []any{
		map[string]any{"protocol": "HTTP"}, map[string]any{"protocol": "TCP"}}}}
	if !hasL4Listener(tcpGateway) {
		t.Error("a Gateway with a TCP listener is not an L4 Gateway")
	}
}

// The echo-basic simulation answers the suite's own TCP, UDP and DNS clients as the image does.
func TestEchoSimulation(t *testing.T) {
	tcpAddr, udpAddr, dnsAddr := os.Getenv("ECHO_SIMULATION_TCP"), os.Getenv("ECHO_SIMULATION_UDP"),
		os.Getenv("ECHO_SIMULATION_DNS")
	if tcpAddr == "" || udpAddr == "" || dnsAddr == "" {
		t.Skip("needs $ECHO_SIMULATION_TCP, _UDP and _DNS (test/conformance/echo-basic.test.ts sets them)")
	}
	namespace, pod := os.Getenv("ECHO_SIMULATION_NAMESPACE"), os.Getenv("ECHO_SIMULATION_POD")
	t.Run("tcpserver", func(t *testing.T) {
		backend, _, _ := strings.Cut(pod, "-")
		tcp.WaitForValidTCPResponse(t, &net.Dialer{}, tcpAddr, tcp.ExpectedResponse{Backend: backend, Namespace: namespace},
			5*time.Second)
		answered, err := tcp.EchoSendOnce(t.Context(), tcpAddr, 2*time.Second)
		if err != nil || answered != pod {
			t.Errorf("EchoSendOnce: pod %q, %v; want %q", answered, err, pod)
		}
	})
	t.Run("udpechoserver", func(t *testing.T) {
		udp.ExpectEchoResponseFromBackend(t, 5*time.Second, udpAddr,
			udp.ExpectedResponse{Service: os.Getenv("ECHO_SIMULATION_SERVICE"), Namespace: namespace})
	})
	t.Run("coredns whoami", func(t *testing.T) {
		msg := new(dns.Msg)
		msg.SetQuestion("foo.bar.com.", dns.TypeA)
		answer, err := dns.Exchange(msg, dnsAddr)
		if err != nil {
			t.Fatalf("dns.Exchange: %v", err)
		}
		if answer.Rcode != dns.RcodeSuccess || len(answer.Answer) != 1 || answer.Id != msg.Id {
			t.Fatalf("answer: %v", answer)
		}
		if a, ok := answer.Answer[0].(*dns.A); !ok || a.Hdr.Name != "foo.bar.com." {
			t.Errorf("want an A record for foo.bar.com., got %v", answer.Answer[0])
		}
	})
}
