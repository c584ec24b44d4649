package kubernetes_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The names the manifests use for each other. A rename must change them
// here too, on purpose.
const (
	montyName     = "monty"       // Deployment, Service, PDB, HPA and container
	redisName     = "monty-redis" // Redis Deployment and Service
	secretName    = "monty"       // the Secret of secret.example.yaml
	montyUID      = 65532         // the image's non-root user and group
	exampleSecret = "secret.example.yaml"
	kustomizeFile = "kustomization.yaml"
)

// Kustomization is the part of kustomize's Kustomization that
// kustomization.yaml may use. The type is local (kustomize's own module is
// large); decoding is strict against it like the rest.
type Kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Resources       []string `json:"resources"`
}

// kinds maps every apiVersion and kind the directory may hold to a new
// value of its official type. Anything else fails the test.
var kinds = map[schema.GroupVersionKind]func() any{
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                              func() any { return new(appsv1.Deployment) },
	corev1.SchemeGroupVersion.WithKind("Service"):                                 func() any { return new(corev1.Service) },
	corev1.SchemeGroupVersion.WithKind("Secret"):                                  func() any { return new(corev1.Secret) },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                               func() any { return new(corev1.ConfigMap) },
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):                   func() any { return new(policyv1.PodDisruptionBudget) },
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"):          func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	{Group: "kustomize.config.k8s.io", Version: "v1beta1", Kind: "Kustomization"}: func() any { return new(Kustomization) },
}

// manifest is one decoded document.
type manifest struct {
	file  string // base name
	index int    // the document's position in its file, from 0
	gvk   schema.GroupVersionKind
	obj   any // a pointer to the official type
}

func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.file, m.index, m.gvk.Kind) }

// splitDocuments splits a YAML stream on its "---" lines, dropping
// documents that hold only comments and blank lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	content := false
	flush := func() {
		if content {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
		content = false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimRight(line, " \t\r")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") || strings.HasPrefix(trimmed, "---\t") {
			flush()
			continue
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			content = true
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

// decodeStrict decodes one document into the official type of its
// apiVersion and kind, refusing unknown kinds, unknown or misspelled
// fields, duplicate keys and values of the wrong type.
func decodeStrict(doc []byte) (schema.GroupVersionKind, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return schema.GroupVersionKind{}, nil, fmt.Errorf("reading apiVersion and kind: %w", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return schema.GroupVersionKind{}, nil, errors.New("no apiVersion or kind")
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	newObj, ok := kinds[gvk]
	if !ok {
		return gvk, nil, fmt.Errorf("unknown apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return gvk, nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return gvk, obj, nil
}

// yamlFiles lists the directory's *.yaml files, sorted.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no *.yaml files in the directory")
	}
	slices.Sort(files)
	return files
}

// load decodes every document of every *.yaml file, failing the test on
// the first that does not decode strictly.
func load(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	for _, f := range yamlFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := splitDocuments(data)
		if len(docs) == 0 {
			t.Fatalf("%s: no documents", f)
		}
		for i, doc := range docs {
			gvk, obj, err := decodeStrict(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i, err)
			}
			out = append(out, manifest{file: f, index: i, gvk: gvk, obj: obj})
		}
	}
	return out
}

// all returns the objects of type T.
func all[T any](ms []manifest) []*T {
	var out []*T
	for _, m := range ms {
		if o, ok := m.obj.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object of type T with the given name, failing the test
// when there is none.
func find[T any, PT interface {
	*T
	metav1.Object
}](t *testing.T, ms []manifest, name string) PT {
	t.Helper()
	for _, o := range all[T](ms) {
		if PT(o).GetName() == name {
			return PT(o)
		}
	}
	var zero T
	t.Fatalf("no %T named %q in the manifests", zero, name)
	return nil
}

// container returns the container called name.
func container(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// envIndex returns the position of the variable called name in c's env, or -1.
func envIndex(c *corev1.Container, name string) int {
	return slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}

// env returns the variable called name, or nil.
func env(c *corev1.Container, name string) *corev1.EnvVar {
	if i := envIndex(c, name); i >= 0 {
		return &c.Env[i]
	}
	return nil
}

// literal returns the literal value of a variable that must have one.
func literal(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	e := env(c, name)
	if e == nil || e.ValueFrom != nil {
		t.Fatalf("container %q: %s must be set to a literal value", c.Name, name)
	}
	return e.Value
}

// port resolves a probe's or Service's port (a number or a name) to one of
// c's container ports.
func port(c *corev1.Container, p intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp, true
		}
	}
	return corev1.ContainerPort{}, false
}

// selectsOnly checks that sel matches the pods of want and of no other
// Deployment in the manifests.
func selectsOnly(t *testing.T, what string, sel labels.Selector, want *appsv1.Deployment, ms []manifest) {
	t.Helper()
	if sel.Empty() {
		t.Errorf("%s: the selector is empty (it would select every pod)", what)
	}
	for _, d := range all[appsv1.Deployment](ms) {
		got := sel.Matches(labels.Set(d.Spec.Template.Labels))
		if d.Name == want.Name && !got {
			t.Errorf("%s: selector %s does not match the pods of Deployment %q (labels %v)", what, sel, d.Name, d.Spec.Template.Labels)
		}
		if d.Name != want.Name && got {
			t.Errorf("%s: selector %s also matches the pods of Deployment %q", what, sel, d.Name)
		}
	}
}

// TestManifestsDecodeStrictly: every document of every *.yaml decodes
// strictly into its official type, names are unique per kind, and the
// expected objects are there.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms := load(t)
	seen := map[string]string{}
	for _, m := range ms {
		o, ok := m.obj.(metav1.Object)
		if !ok {
			continue // the Kustomization has no metadata
		}
		if o.GetName() == "" {
			t.Errorf("%s: no metadata.name", m)
		}
		if o.GetNamespace() != "" {
			t.Errorf("%s: metadata.namespace %q: the manifests go into the namespace they are applied to", m, o.GetNamespace())
		}
		key := m.gvk.Kind + "/" + o.GetName()
		if prev, dup := seen[key]; dup {
			t.Errorf("%s: %s is defined twice (also in %s)", m, key, prev)
		}
		seen[key] = m.String()
	}
	for _, want := range []string{"Deployment/" + montyName, "Service/" + montyName, "PodDisruptionBudget/" + montyName,
		"HorizontalPodAutoscaler/" + montyName, "Secret/" + secretName, "Deployment/" + redisName, "Service/" + redisName} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no %s in the manifests", want)
		}
	}
	if len(all[Kustomization](ms)) != 1 {
		t.Errorf("want one Kustomization (%s)", kustomizeFile)
	}
}

// TestStrictDecodingRejectsMistakes proves that the decoding above is
// strict: each mistake made in a copy of deployment.yaml is refused, while
// the copy as it is decodes.
func TestStrictDecodingRejectsMistakes(t *testing.T) {
	data, err := os.ReadFile("deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	if _, _, err := decodeStrict(data); err != nil {
		t.Fatalf("deployment.yaml as it is: %v", err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"misspelled field", "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", `unknown field "terminationGracePeriodSecond"`},
		{"unknown field", "  revisionHistoryLimit:", "  replica: 2\n  revisionHistoryLimit:", `unknown field "replica"`},
		{"field at the wrong level", "      automountServiceAccountToken:", "      readOnlyRootFilesystem: true\n      automountServiceAccountToken:", `unknown field "readOnlyRootFilesystem"`},
		{"misspelled probe field", "              path:", "              paht:", `unknown field "paht"`},
		{"wrong type", "terminationGracePeriodSeconds:", "terminationGracePeriodSeconds: forty #", "cannot unmarshal"},
		{"duplicate key", "  revisionHistoryLimit:", "  revisionHistoryLimit: 6\n  revisionHistoryLimit:", "already set"},
		{"unknown kind", "kind: Deployment", "kind: Deploymnet", "unknown apiVersion"},
		{"unknown apiVersion", "apiVersion: apps/v1", "apiVersion: apps/v1beta9", "unknown apiVersion"},
		{"no kind", "kind: Deployment\n", "\n", "no apiVersion or kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("deployment.yaml no longer contains %q: update this case", tc.old)
			}
			_, _, err := decodeStrict([]byte(strings.Replace(src, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("the mistake was accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestSplitDocuments: "---" lines separate documents; documents of
// comments only are dropped; "---" inside a value is not a separator.
func TestSplitDocuments(t *testing.T) {
	in := "# leading comment\n---\na: 1\n--- # next\nb: |\n  x---\n  ---y\n---\n# only a comment\n---   \nc: 3\n"
	got := splitDocuments([]byte(in))
	want := []string{"a: 1\n", "b: |\n  x---\n  ---y\n", "c: 3\n"}
	if len(got) != len(want) {
		t.Fatalf("got %d documents %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("document %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// TestMontyProbes: liveness is GET / and readiness GET /health, over plain
// HTTP on the port monty listens on; no probe or hook runs a command (the
// image has no shell).
func TestMontyProbes(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	c := container(t, &d.Spec.Template.Spec, montyName)
	cp, ok := port(c, intstr.FromString("http"))
	if !ok {
		t.Fatalf("container %q has no port named http", c.Name)
	}
	host, p, err := net.SplitHostPort(literal(t, c, "MONTY_ADDR"))
	if err != nil {
		t.Fatalf("MONTY_ADDR: %v", err)
	}
	if p != strconv.Itoa(int(cp.ContainerPort)) {
		t.Errorf("MONTY_ADDR listens on port %s, the container port is %d", p, cp.ContainerPort)
	}
	if host != "0.0.0.0" && host != "" && host != "::" {
		t.Errorf("MONTY_ADDR host %q: probes and the Service reach the pod's address, so listen on all of them (0.0.0.0)", host)
	}
	if env(c, "MONTY_TLS_CERT") != nil {
		t.Error("MONTY_TLS_CERT is set: the probes below are plain HTTP; change both together")
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/"}, {"readinessProbe", c.ReadinessProbe, "/health"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe of %s", pr.name, pr.path)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != pr.path {
			t.Errorf("%s: path %q, want %q", pr.name, g.Path, pr.path)
		}
		if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
			t.Errorf("%s: scheme %s, want HTTP", pr.name, g.Scheme)
		}
		if got, ok := port(c, g.Port); !ok || got.ContainerPort != cp.ContainerPort {
			t.Errorf("%s: port %s is not the container port %d", pr.name, g.Port.String(), cp.ContainerPort)
		}
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr != nil && pr.Exec != nil {
			t.Error("an exec probe: the image is scratch, with no shell or commands")
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PreStop, c.Lifecycle.PostStart} {
			if h != nil && h.Exec != nil {
				t.Error("an exec lifecycle hook: the image is scratch, with no shell or commands")
			}
		}
	}
}

// cancelWait is how long monty serve waits, once MONTY_SHUTDOWN_TIMEOUT has
// passed and the executions still running are cancelled, for them to stop
// (shutdownGrace in session/httpapi).
const cancelWait = 5 * time.Second

// TestMontyDrain: the grace period is longer than the preStop sleep plus
// MONTY_SHUTDOWN_TIMEOUT plus the wait for cancelled executions, so
// Kubernetes does not kill monty while it drains; and an execution may run
// no longer than the drain lets it.
func TestMontyDrain(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, montyName)
	shutdown, err := time.ParseDuration(literal(t, c, "MONTY_SHUTDOWN_TIMEOUT"))
	if err != nil || shutdown <= 0 {
		t.Fatalf("MONTY_SHUTDOWN_TIMEOUT: want a positive Go duration (%v)", err)
	}
	var sleep time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if s := c.Lifecycle.PreStop.Sleep; s != nil {
			sleep = time.Duration(s.Seconds) * time.Second
		}
	}
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= sleep+shutdown+cancelWait {
		t.Errorf("terminationGracePeriodSeconds %v is not above preStop sleep %v + MONTY_SHUTDOWN_TIMEOUT %v + %v for cancelled executions to stop", grace, sleep, shutdown, cancelWait)
	}
	maxDuration := 30 * time.Second // monty serve's default --max-duration (docs/http.md)
	if e := env(c, "MONTY_MAX_DURATION"); e != nil {
		if maxDuration, err = time.ParseDuration(e.Value); err != nil {
			t.Fatalf("MONTY_MAX_DURATION: %v", err)
		}
	}
	if maxDuration <= 0 || maxDuration > shutdown {
		t.Errorf("MONTY_MAX_DURATION %v: an execution may outlast MONTY_SHUTDOWN_TIMEOUT %v and be cancelled by a drain", maxDuration, shutdown)
	}
}

// secretRef checks that e takes its value from a key of the example
// Secret, and returns the key.
func secretRef(t *testing.T, e *corev1.EnvVar, secret *corev1.Secret) string {
	t.Helper()
	if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Errorf("%s must come from a secretKeyRef, not a literal value", e.Name)
		return ""
	}
	ref := e.ValueFrom.SecretKeyRef
	if ref.Name != secret.Name {
		t.Errorf("%s: Secret %q, want %q (secret.example.yaml)", e.Name, ref.Name, secret.Name)
	}
	if ref.Optional != nil && *ref.Optional {
		t.Errorf("%s: an optional Secret key would start monty without it", e.Name)
	}
	if _, ok := secretValue(secret, ref.Key); !ok {
		t.Errorf("%s: key %q is not in secret.example.yaml (nor, then, in its kubectl command)", e.Name, ref.Key)
	}
	return ref.Key
}

// secretValue returns a key's value in a Secret, from stringData or data.
func secretValue(s *corev1.Secret, key string) (string, bool) {
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// TestMontySecrets: the signing key and the API keys come from the Secret
// (as variables, or as files of a Secret volume), and no secret-looking
// variable has a literal value.
func TestMontySecrets(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, montyName)
	secret := find[corev1.Secret](t, ms, secretName)
	for _, v := range []struct{ direct, file string }{
		{"MONTY_SIGNING_KEY", "MONTY_SIGNING_KEY_FILE"},
		{"MONTY_API_KEYS", "MONTY_API_KEY_FILE"},
	} {
		switch e, f := env(c, v.direct), env(c, v.file); {
		case e != nil:
			secretRef(t, e, secret)
		case f != nil:
			if !fromSecretVolume(pod, c, f.Value, secret.Name) {
				t.Errorf("%s=%q is not a file of a volume of Secret %q", v.file, f.Value, secret.Name)
			}
		default:
			t.Errorf("neither %s nor %s is set", v.direct, v.file)
		}
	}
	secretish := regexp.MustCompile(`KEY|PASSWORD|SECRET|TOKEN`)
	for _, e := range c.Env {
		if secretish.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") && e.Value != "" {
			t.Errorf("%s has a literal value in the manifest", e.Name)
		}
	}
}

// fromSecretVolume reports whether path is under a mount of c whose volume
// is the Secret called name.
func fromSecretVolume(pod *corev1.PodSpec, c *corev1.Container, path, name string) bool {
	for _, m := range c.VolumeMounts {
		if path != m.MountPath && !strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == name {
				return true
			}
		}
	}
	return false
}

// envRef matches a Kubernetes variable reference, $(NAME).
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestMontyStore: MONTY_STORE is a redis:// spec (session/store/storeurl)
// naming the Redis Service and its port, whose password is a reference to
// a variable from the Secret, defined earlier (Kubernetes expands only
// those) and the same key the Redis server is given.
func TestMontyStore(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	c := container(t, &d.Spec.Template.Spec, montyName)
	secret := find[corev1.Secret](t, ms, secretName)
	spec := literal(t, c, "MONTY_STORE")
	storeAt := envIndex(c, "MONTY_STORE")
	for _, m := range envRef.FindAllStringSubmatch(spec, -1) {
		if i := envIndex(c, m[1]); i < 0 || i > storeAt {
			t.Errorf("MONTY_STORE refers to $(%s), which is not defined before it: Kubernetes would leave the reference as it is", m[1])
		}
	}
	u, err := url.Parse(spec)
	if err != nil {
		t.Fatalf("MONTY_STORE: %v", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		t.Fatalf("MONTY_STORE: scheme %q, want redis or rediss", u.Scheme)
	}
	if strings.Contains(spec, ",") {
		t.Errorf("MONTY_STORE: a HOT,COLD pair; this test checks a single Redis")
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if _, err := strconv.Atoi(db); err != nil {
			t.Errorf("MONTY_STORE: database %q is not a number", db)
		}
	}
	svc := find[corev1.Service](t, ms, redisName)
	if host, _, _ := strings.Cut(u.Hostname(), "."); host != svc.Name {
		t.Errorf("MONTY_STORE: host %q is not the Redis Service %q", u.Hostname(), svc.Name)
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if strconv.Itoa(int(svc.Spec.Ports[i].Port)) == u.Port() {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		t.Fatalf("MONTY_STORE: port %q is not a port of Service %q", u.Port(), svc.Name)
	}

	// The password: a reference to a variable from the Secret, whose key
	// is the one the Redis server requires.
	pass, ok := u.User.Password()
	if !ok {
		t.Fatal("MONTY_STORE has no password, but the Redis of redis.yaml requires one")
	}
	m := envRef.FindStringSubmatch(pass)
	if m == nil || m[0] != pass {
		t.Fatalf("MONTY_STORE: the password must be a $(VARIABLE) from the Secret, not a literal")
	}
	montyKey := secretRef(t, env(c, m[1]), secret)

	redis := find[appsv1.Deployment](t, ms, redisName)
	selectsOnly(t, "Service "+svc.Name, labels.SelectorFromSet(svc.Spec.Selector), redis, ms)
	rc := container(t, &redis.Spec.Template.Spec, "redis")
	if _, ok := port(rc, svcPort.TargetPort); !ok {
		t.Errorf("Service %q targets port %s, which the redis container does not have", svc.Name, svcPort.TargetPort.String())
	}
	args := strings.Join(append(slices.Clone(rc.Command), rc.Args...), " ")
	rm := regexp.MustCompile(`--requirepass \$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindStringSubmatch(args)
	if rm == nil {
		t.Fatalf("the redis container is not started with --requirepass $(VARIABLE)")
	}
	if e := env(rc, rm[1]); e == nil {
		t.Errorf("redis: --requirepass refers to $(%s), which is not set", rm[1])
	} else if redisKey := secretRef(t, e, secret); redisKey != montyKey {
		t.Errorf("monty's Redis password is Secret key %q, the server's is %q", montyKey, redisKey)
	}
}

// TestMontySecurity: non-root as the image's uid and gid 65532, read-only
// root, no privilege escalation, no capabilities, the runtime's seccomp
// profile; no Service links (they would set MONTY_PORT and the like).
func TestMontySecurity(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, montyName)
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		t.Fatal("the monty container has no securityContext")
	}
	// The container's setting wins over the pod's.
	nonRoot := cmpPtr(csc.RunAsNonRoot, psc.RunAsNonRoot)
	if nonRoot == nil || !*nonRoot {
		t.Error("runAsNonRoot is not true")
	}
	for _, id := range []struct {
		name string
		v    *int64
	}{{"runAsUser", cmpPtr(csc.RunAsUser, psc.RunAsUser)}, {"runAsGroup", cmpPtr(csc.RunAsGroup, psc.RunAsGroup)}} {
		if id.v == nil || *id.v != montyUID {
			t.Errorf("%s is not %d, the image's user", id.name, montyUID)
		}
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if csc.Privileged != nil && *csc.Privileged {
		t.Error("the container is privileged")
	}
	if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") || len(csc.Capabilities.Add) > 0 {
		t.Error("capabilities: want drop [ALL] and nothing added")
	}
	seccomp := cmpPtr(csc.SeccompProfile, psc.SeccompProfile)
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("seccompProfile is not RuntimeDefault")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("enableServiceLinks is not false: the Service \"monty\" would set MONTY_PORT, MONTY_SERVICE_HOST, ... in monty's environment")
	}
	if !strings.EqualFold(literal(t, c, "MONTY_CACHE_DIR"), "off") {
		t.Error("MONTY_CACHE_DIR is not off: the root filesystem is read-only and the image's engine has nothing to cache")
	}
}

// cmpPtr returns the first non-nil pointer.
func cmpPtr[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// TestMontyResources: requests and limits are set (the HPA's utilization
// is relative to the CPU request), and the memory limit holds
// MONTY_CONCURRENCY executions of MONTY_MAX_MEMORY each.
func TestMontyResources(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	c := container(t, &d.Spec.Template.Spec, montyName)
	for _, rl := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl.list[r]; !ok || q.Sign() <= 0 {
				t.Errorf("resources.%s.%s is not set", rl.name, r)
			}
		}
	}
	// Without MONTY_CONCURRENCY the number of executions depends on the
	// CPUs Go sees (2 per CPU), so it is set here.
	concurrency, err := strconv.Atoi(literal(t, c, "MONTY_CONCURRENCY"))
	if err != nil || concurrency <= 0 {
		t.Fatalf("MONTY_CONCURRENCY: want a positive number (%v)", err)
	}
	perExec := int64(256 << 20) // monty serve's default --max-memory
	if e := env(c, "MONTY_MAX_MEMORY"); e != nil {
		if perExec, err = parseSize(e.Value); err != nil {
			t.Fatalf("MONTY_MAX_MEMORY: %v", err)
		}
	}
	limit := c.Resources.Limits[corev1.ResourceMemory]
	if need := resource.NewQuantity(int64(concurrency)*perExec, resource.BinarySI); limit.Cmp(*need) <= 0 {
		t.Errorf("memory limit %s does not exceed MONTY_CONCURRENCY (%d) x MONTY_MAX_MEMORY (%s) = %s", limit.String(), concurrency, shown(c, "MONTY_MAX_MEMORY"), need.String())
	}
}

// shown returns a variable's literal value, or "default", for messages.
func shown(c *corev1.Container, name string) string {
	if v := env(c, name); v != nil {
		return v.Value
	}
	return "default"
}

// parseSize reads a size as monty's flags write it: a number with an
// optional B, KiB, MiB or GiB (or KB, MB, GB) suffix.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			return v * u.mult, err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// TestMontyService: the Service selects monty's pods only and forwards to
// the port monty listens on.
func TestMontyService(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	c := container(t, &d.Spec.Template.Spec, montyName)
	svc := find[corev1.Service](t, ms, montyName)
	selectsOnly(t, "Service "+svc.Name, labels.SelectorFromSet(svc.Spec.Selector), d, ms)
	if len(svc.Spec.Ports) == 0 {
		t.Fatal("the Service has no ports")
	}
	_, addrPort, _ := net.SplitHostPort(literal(t, c, "MONTY_ADDR"))
	for _, p := range svc.Spec.Ports {
		cp, ok := port(c, p.TargetPort)
		if !ok {
			t.Errorf("Service port %d targets %s, which the monty container does not have", p.Port, p.TargetPort.String())
			continue
		}
		if strconv.Itoa(int(cp.ContainerPort)) != addrPort {
			t.Errorf("Service port %d reaches container port %d; monty listens on %s", p.Port, cp.ContainerPort, addrPort)
		}
		if p.Port != 8080 {
			t.Errorf("Service port %d: the docs and clients use 8080", p.Port)
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector does not match its pod template's labels (%v)", err)
	}
}

// TestMontyPDB: the PodDisruptionBudget covers monty's pods only and
// leaves at least one serving at the autoscaler's minimum.
func TestMontyPDB(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	pdb := find[policyv1.PodDisruptionBudget](t, ms, montyName)
	hpa := find[autoscalingv2.HorizontalPodAutoscaler](t, ms, montyName)
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatalf("PDB selector: %v", err)
	}
	selectsOnly(t, "PodDisruptionBudget "+pdb.Name, sel, d, ms)
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	switch {
	case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable != nil:
		t.Error("the PDB sets both maxUnavailable and minAvailable")
	case pdb.Spec.MaxUnavailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(minReplicas), true)
		if err != nil || v < 1 || v >= int(minReplicas) {
			t.Errorf("PDB maxUnavailable %s at %d replicas: want at least 1 evictable and 1 serving", pdb.Spec.MaxUnavailable.String(), minReplicas)
		}
	case pdb.Spec.MinAvailable != nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(minReplicas), true)
		if err != nil || v < 1 || v >= int(minReplicas) {
			t.Errorf("PDB minAvailable %s at %d replicas: want at least 1 evictable and 1 serving", pdb.Spec.MinAvailable.String(), minReplicas)
		}
	default:
		t.Error("the PDB sets neither maxUnavailable nor minAvailable")
	}
}

// TestMontyHPA: the autoscaler targets the monty Deployment, on CPU
// utilization, and owns the replica count.
func TestMontyHPA(t *testing.T) {
	ms := load(t)
	d := find[appsv1.Deployment](t, ms, montyName)
	hpa := find[autoscalingv2.HorizontalPodAutoscaler](t, ms, montyName)
	ref := hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("scaleTargetRef %s %s %q, want apps/v1 Deployment %q", ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Error("minReplicas: want at least 2, so that an eviction or a crash leaves one replica serving")
	} else if hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("maxReplicas %d is below minReplicas %d", hpa.Spec.MaxReplicas, *hpa.Spec.MinReplicas)
	}
	cpu := false
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil {
			cpu = true
			if u := *m.Resource.Target.AverageUtilization; u <= 0 || u > 100 {
				t.Errorf("CPU averageUtilization %d: want 1 to 100", u)
			}
		}
	}
	if !cpu {
		t.Error("no CPU utilization metric")
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Errorf("container %q has no CPU request: the HPA cannot compute utilization", c.Name)
		}
	}
	if d.Spec.Replicas != nil {
		t.Error("the Deployment sets replicas: every kubectl apply would reset the autoscaler's count")
	}
}

// TestExampleSecret: the example Secret holds placeholders that monty
// serve refuses (a signing key under 16 bytes, API keys under 8
// characters), so that it cannot go into service by mistake.
func TestExampleSecret(t *testing.T) {
	ms := load(t)
	s := find[corev1.Secret](t, ms, secretName)
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("type %q, want Opaque", s.Type)
	}
	if v, ok := secretValue(s, "signing-key"); !ok || len(v) >= 16 {
		t.Errorf("signing-key %q: the placeholder must be shorter than 16 bytes, so that monty serve refuses it", v)
	}
	v, ok := secretValue(s, "api-keys")
	if !ok {
		t.Fatal("no api-keys")
	}
	for _, k := range strings.Split(v, ",") {
		if len(strings.TrimSpace(k)) >= 8 {
			t.Errorf("api-keys entry %q: placeholders must be shorter than 8 characters, so that monty serve refuses them", k)
		}
	}
}

// TestKustomization: kustomization.yaml lists every manifest but itself
// and the example Secret (which `kubectl apply -k` would otherwise write
// over the real one).
func TestKustomization(t *testing.T) {
	ms := load(t)
	ks := all[Kustomization](ms)
	if len(ks) != 1 {
		t.Fatalf("%d Kustomizations, want 1", len(ks))
	}
	var want []string
	for _, f := range yamlFiles(t) {
		if f != kustomizeFile && f != exampleSecret {
			want = append(want, f)
		}
	}
	got := slices.Sorted(slices.Values(ks[0].Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources %v, want %v", got, want)
	}
}
