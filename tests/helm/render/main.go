// Command render is a small, Helm-compatible chart renderer used by the
// coxswain tests, because Helm itself is not installable on our machines.
//
// It implements the part of Helm 3 that `helm template` exercises and that
// charts like ours rely on, with the same libraries Helm uses:
//
//   - values: the chart's values.yaml coalesced with --values files and
//     --set-json overrides (later wins, maps merge deeply, a null deletes a
//     default), parsed the way Helm parses them (YAML -> JSON, so every
//     number is a float64);
//   - values.schema.json validated with xeipuuv/gojsonschema, Helm 3's
//     validator, with Helm's error text;
//   - Chart.yaml's kubeVersion constraint checked against --kube-version;
//   - templates: text/template with sprig's function map minus env and
//     expandenv, plus Helm's include, tpl, required, fail, toYaml, fromYaml,
//     fromYamlArray, toJson, fromJson, fromJsonArray and lookup (always
//     empty, as in `helm template`); missingkey=zero and "<no value>" erased
//     as Helm does; files starting with "_" are partials; NOTES.txt is not
//     part of the manifest;
//   - .Values, .Release, .Chart, .Capabilities, .Template, .Files (Get);
//   - output like `helm template`: every document as
//     "---\n# Source: <chart>/templates/<file>\n...", sorted by Helm's
//     install order, CRDs from crds/ first with --include-crds; errors as
//     "execution error at (<file>:<line>:<col>): <message>".
//
// Usage: render [--values FILE]... [--set-json PATH=JSON]... [--name NAME]
//
//	[--namespace NS] [--include-crds] [--kube-version vX.Y.Z]
//	[--api-versions GROUP/VERSION[/Kind]]... [--show-only FILE] CHART_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"github.com/ghodss/yaml"
	"github.com/xeipuuv/gojsonschema"
)

type multiFlag []string

// Metadata mirrors Helm's chart.Metadata: templates see .Chart.Name,
// .Chart.Version, .Chart.AppVersion and so on.
type Metadata struct {
	Name         string            `json:"name"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion"`
	AppVersion   string            `json:"appVersion,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Type         string            `json:"type,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	Maintainers  []interface{}     `json:"maintainers,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
}

type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (kv KubeVersion) String() string { return kv.Version }

// GitVersion is the deprecated alias Helm still offers.
func (kv KubeVersion) GitVersion() string { return kv.Version }

type VersionSet []string

// Has answers like Helm's: "group/version" or "group/version/Kind".
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type HelmVersion struct {
	Version   string
	GitCommit string
	GoVersion string
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion HelmVersion
}

// Files offers the subset of Helm's .Files used by charts: Get and
// AsConfig-free access. Only files outside templates/ and crds/.
type Files map[string][]byte

func (f Files) Get(name string) string { return string(f[name]) }
func (f Files) GetBytes(name string) []byte { return f[name] }

// Helm's built-in API versions (chartutil.DefaultVersionSet) for the kinds
// a chart usually probes; --api-versions adds more (e.g. monitoring).
var defaultAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "autoscaling/v2",
	"rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1",
	"discovery.k8s.io/v1", "networking.k8s.io/v1", "events.k8s.io/v1",
	"apiextensions.k8s.io/v1", "admissionregistration.k8s.io/v1",
	"storage.k8s.io/v1", "scheduling.k8s.io/v1",
}

// Helm's InstallOrder (pkg/releaseutil/kind_sorter.go).
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret",
	"SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role",
	"RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
	"ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass",
	"Ingress", "APIService",
}

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

type options struct {
	values      multiFlag
	setJSON     multiFlag
	apiVersions multiFlag
	name        string
	namespace   string
	kubeVersion string
	includeCRDs bool
	showOnly    string
	chartDir    string
}

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "Error: "+format+"\n", a...)
	os.Exit(1)
}

func parseArgs(args []string) options {
	o := options{name: "release-name", namespace: "default", kubeVersion: "v1.30.0"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 >= len(args) {
				die("flag %s needs a value", a)
			}
			i++
			return args[i]
		}
		switch a {
		case "-f", "--values":
			o.values = append(o.values, next())
		case "--set-json":
			o.setJSON = append(o.setJSON, next())
		case "-a", "--api-versions":
			o.apiVersions = append(o.apiVersions, next())
		case "--name":
			o.name = next()
		case "-n", "--namespace":
			o.namespace = next()
		case "--kube-version":
			o.kubeVersion = next()
		case "--include-crds":
			o.includeCRDs = true
		case "-s", "--show-only":
			o.showOnly = next()
		case "-h", "--help":
			fmt.Println("usage: render [--values FILE]... [--set-json PATH=JSON]... [--name NAME] [--namespace NS] [--include-crds] [--kube-version vX.Y.Z] [--api-versions G/V]... [--show-only FILE] CHART_DIR")
			os.Exit(0)
		default:
			if strings.HasPrefix(a, "-") {
				die("unknown flag: %s", a)
			}
			if o.chartDir != "" {
				die("only one chart directory may be given")
			}
			o.chartDir = a
		}
	}
	if o.chartDir == "" {
		die("a chart directory is required")
	}
	return o
}

// readValues parses YAML the way Helm does (sigs.k8s.io/yaml: YAML -> JSON
// -> Go), so numbers are float64 and keys are strings.
func readValues(data []byte) (map[string]interface{}, error) {
	vals := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, err
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

// coalesce merges src (user values) over dst (defaults) like Helm's
// chartutil.CoalesceTables: user wins; maps merge; a user null removes the
// default key.
func coalesce(dst, src map[string]interface{}) map[string]interface{} {
	if dst == nil {
		dst = map[string]interface{}{}
	}
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		if dv, ok := dst[k]; ok {
			dm, dIsMap := dv.(map[string]interface{})
			sm, sIsMap := sv.(map[string]interface{})
			if dIsMap && sIsMap {
				dst[k] = coalesce(dm, sm)
				continue
			}
			if dIsMap != sIsMap && dv != nil {
				fmt.Fprintf(os.Stderr, "coalesce.go: warning: cannot overwrite table with non table for %s (%v)\n", k, dv)
				if dIsMap {
					continue
				}
			}
		}
		dst[k] = sv
	}
	return dst
}

// setPath puts a JSON value at a dotted path (--set-json a.b.c=JSON).
func setPath(vals map[string]interface{}, spec string) error {
	eq := strings.Index(spec, "=")
	if eq <= 0 {
		return fmt.Errorf("--set-json %q: want PATH=JSON", spec)
	}
	var v interface{}
	if err := json.Unmarshal([]byte(spec[eq+1:]), &v); err != nil {
		return fmt.Errorf("--set-json %q: %v", spec, err)
	}
	keys := strings.Split(spec[:eq], ".")
	m := vals
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	return nil
}

func validateSchema(chartName string, schema []byte, vals map[string]interface{}) error {
	data, err := yaml.Marshal(vals)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	if bytes.Equal(js, []byte("null")) {
		js = []byte("{}")
	}
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(js))
	if err != nil {
		return fmt.Errorf("%s: invalid values.schema.json: %v", chartName, err)
	}
	if res.Valid() {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("values don't meet the specifications of the schema(s) in the following chart(s):\n")
	sb.WriteString(chartName + ":\n")
	for _, e := range res.Errors() {
		sb.WriteString(fmt.Sprintf("- %s\n", e))
	}
	return errors.New(sb.String())
}

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(str string) []interface{} {
	a := []interface{}{}
	if err := yaml.Unmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(str string) []interface{} {
	a := []interface{}{}
	if err := json.Unmarshal([]byte(str), &a); err != nil {
		a = []interface{}{err.Error()}
	}
	return a
}

const recursionMax = 1000

// engine holds the template set; include and tpl close over it.
type engine struct {
	t        *template.Template
	included map[string]int
}

func (e *engine) funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	extra := template.FuncMap{
		"toYaml":        toYAML,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		"include": func(name string, data interface{}) (string, error) {
			if e.included[name] > recursionMax {
				return "", fmt.Errorf("unable to execute template: rendering template has a nested reference name: %s", name)
			}
			e.included[name]++
			defer func() { e.included[name]-- }()
			var buf strings.Builder
			err := e.t.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"tpl": func(text string, vals interface{}) (string, error) {
			t, err := e.t.Clone()
			if err != nil {
				return "", err
			}
			t.Option("missingkey=zero")
			name := "tpl"
			if m, ok := vals.(map[string]interface{}); ok {
				if tm, ok := m["Template"].(map[string]interface{}); ok {
					if n, ok := tm["Name"].(string); ok {
						name = n
					}
				}
			}
			t, err = t.New(name).Parse(text)
			if err != nil {
				return "", fmt.Errorf("cannot parse template %q: %v", text, err)
			}
			var buf strings.Builder
			if err := t.Execute(&buf, vals); err != nil {
				return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
			}
			return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
		},
		"required": func(warn string, val interface{}) (interface{}, error) {
			if val == nil {
				return val, errors.New(warn)
			}
			if s, ok := val.(string); ok && s == "" {
				return val, errors.New(warn)
			}
			return val, nil
		},
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
		"lookup": func(apiversion, kind, namespace, name string) (map[string]interface{}, error) {
			return map[string]interface{}{}, nil
		},
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

var execErrRe = regexp.MustCompile(`^template: (\S+?):(\d+):(\d+): executing "[^"]*" at <[^>]*>: error calling \w+: (.*)$`)

// cleanupExecError rewrites Go's template error the way Helm's
// engine.cleanupExecError does: the location of the rendered file (the
// outermost frame) and the innermost message of the include chain.
func cleanupExecError(err error) error {
	m := execErrRe.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	loc := fmt.Sprintf("%s:%s:%s", m[1], m[2], m[3])
	msg := m[4]
	for {
		inner := execErrRe.FindStringSubmatch(msg)
		if inner == nil {
			break
		}
		msg = inner[4]
	}
	return fmt.Errorf("execution error at (%s): %s", loc, msg)
}

type manifest struct {
	source string
	kind   string
	body   string
}

var sepRe = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

func splitManifests(s string) []string {
	var out []string
	for _, d := range sepRe.Split(s, -1) {
		if strings.TrimSpace(d) == "" {
			continue
		}
		out = append(out, strings.TrimSpace(d))
	}
	return out
}

func kindOf(doc string) (string, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return "", err
	}
	return head.Kind, nil
}

func kindRank(k string) int {
	for i, x := range installOrder {
		if x == k {
			return i
		}
	}
	return len(installOrder)
}

func run(o options) (string, error) {
	chartYAML, err := os.ReadFile(filepath.Join(o.chartDir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var md Metadata
	if err := yaml.Unmarshal(chartYAML, &md); err != nil {
		return "", fmt.Errorf("Chart.yaml: %v", err)
	}
	if md.Name == "" || md.Version == "" || md.APIVersion == "" {
		return "", errors.New("Chart.yaml: name, version and apiVersion are required")
	}
	if _, err := semver.StrictNewVersion(md.Version); err != nil {
		return "", fmt.Errorf("Chart.yaml: version %q is not a valid SemVerV2: %v", md.Version, err)
	}
	kv, err := semver.NewVersion(o.kubeVersion)
	if err != nil {
		return "", fmt.Errorf("invalid kube version %q: %v", o.kubeVersion, err)
	}
	if md.KubeVersion != "" {
		c, err := semver.NewConstraint(md.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("Chart.yaml: kubeVersion %q: %v", md.KubeVersion, err)
		}
		if !c.Check(kv) {
			return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", md.KubeVersion, o.kubeVersion)
		}
	}

	defaults := map[string]interface{}{}
	if data, err := os.ReadFile(filepath.Join(o.chartDir, "values.yaml")); err == nil {
		if defaults, err = readValues(data); err != nil {
			return "", fmt.Errorf("values.yaml: %v", err)
		}
	}
	user := map[string]interface{}{}
	for _, f := range o.values {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		v, err := readValues(data)
		if err != nil {
			return "", fmt.Errorf("failed to parse %s: %v", f, err)
		}
		user = mergeMaps(user, v)
	}
	for _, s := range o.setJSON {
		if err := setPath(user, s); err != nil {
			return "", err
		}
	}
	vals := coalesce(defaults, user)
	if schema, err := os.ReadFile(filepath.Join(o.chartDir, "values.schema.json")); err == nil {
		if err := validateSchema(md.Name, schema, vals); err != nil {
			return "", err
		}
	}

	caps := Capabilities{
		KubeVersion: KubeVersion{Version: "v" + kv.String(), Major: fmt.Sprint(kv.Major()), Minor: fmt.Sprint(kv.Minor())},
		APIVersions: append(VersionSet(append([]string{}, defaultAPIVersions...)), o.apiVersions...),
		HelmVersion: HelmVersion{Version: "v3.14.0+coxswain-render", GoVersion: "go"},
	}
	release := map[string]interface{}{
		"Name": o.name, "Namespace": o.namespace, "IsInstall": true, "IsUpgrade": false,
		"Revision": 1, "Service": "Helm",
	}
	files := Files{}
	tmplSrc := map[string]string{}
	err = filepath.Walk(o.chartDir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(o.chartDir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			tmplSrc[path.Join(md.Name, rel)] = string(data)
		} else if !strings.HasPrefix(rel, "crds/") && rel != "Chart.yaml" && rel != "values.yaml" {
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		return "", err
	}

	e := &engine{included: map[string]int{}}
	e.t = template.New("gotpl").Option("missingkey=zero")
	e.t.Funcs(e.funcMap())
	names := make([]string, 0, len(tmplSrc))
	for n := range tmplSrc {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := e.t.New(n).Parse(tmplSrc[n]); err != nil {
			return "", fmt.Errorf("parse error at (%s): %v", n, err)
		}
	}
	top := map[string]interface{}{
		"Values": vals, "Release": release, "Chart": &md, "Capabilities": &caps,
		"Files": files, "Subcharts": map[string]interface{}{},
	}
	var manifests []manifest
	for _, n := range names {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(n, "NOTES.txt") {
			continue
		}
		vals := map[string]interface{}{}
		for k, v := range top {
			vals[k] = v
		}
		vals["Template"] = map[string]interface{}{"Name": n, "BasePath": path.Join(md.Name, "templates")}
		var buf strings.Builder
		if err := e.t.ExecuteTemplate(&buf, n, vals); err != nil {
			return "", cleanupExecError(err)
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		for _, doc := range splitManifests(out) {
			k, err := kindOf(doc)
			if err != nil {
				return "", fmt.Errorf("YAML parse error on %s: %v", n, err)
			}
			manifests = append(manifests, manifest{source: n, kind: k, body: doc})
		}
	}
	sort.SliceStable(manifests, func(i, j int) bool {
		ri, rj := kindRank(manifests[i].kind), kindRank(manifests[j].kind)
		if ri != rj {
			return ri < rj
		}
		if ri == len(installOrder) {
			return manifests[i].kind < manifests[j].kind
		}
		return false
	})

	var out strings.Builder
	if o.includeCRDs && o.showOnly == "" {
		var crds []string
		for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(o.chartDir, "crds", ext))
			crds = append(crds, m...)
		}
		sort.Strings(crds)
		for _, c := range crds {
			data, err := os.ReadFile(c)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&out, "---\n# Source: %s/crds/%s\n%s", md.Name, filepath.Base(c), string(data))
			if !bytes.HasSuffix(data, []byte("\n")) {
				out.WriteString("\n")
			}
		}
	}
	shown := false
	for _, m := range manifests {
		if o.showOnly != "" && m.source != path.Join(md.Name, o.showOnly) {
			continue
		}
		shown = true
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.source, m.body)
	}
	if o.showOnly != "" && !shown {
		return "", fmt.Errorf("could not find template %s in chart", o.showOnly)
	}
	return out.String(), nil
}

// mergeMaps merges later values files over earlier ones (Helm's
// MergeValues for -f): maps merge recursively, anything else replaces.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if am, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func main() {
	o := parseArgs(os.Args[1:])
	out, err := run(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(out)
}
