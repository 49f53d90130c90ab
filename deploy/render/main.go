// Command render renders a Helm chart the way `helm template` does, for CI
// machines without helm (it is not packaged in Debian). It implements the
// subset of Helm 3 that crl's chart (deploy/helm/crl) uses:
//
//   - values: values.yaml, then each -f FILE (deep merge), then each
//     --set / --set-string (Helm's strvals syntax for the common cases:
//     a.b=c, several pairs separated by commas, a[0]=x, {x,y} lists,
//     true/false/null/integers typed like Helm, `\,` and `\.` escapes);
//   - objects: .Values .Release .Chart .Capabilities .Template .Files;
//   - functions: sprig (minus env/expandenv, like Helm) plus include, tpl,
//     required, fail, lookup (always an empty map, as under `helm template`),
//     toYaml, fromYaml, fromYamlArray, toJson, fromJson, fromJsonArray,
//     mustToYaml/mustToJson;
//   - templates: every file under templates/ (helpers `_*` only define;
//     NOTES.txt is rendered but not printed); the documents are printed in
//     Helm's install order (kinds), hooks such as tests last, each as
//     "---\n# Source: <chart>/templates/<file>".
//
// Build (offline, Debian's golang-go + golang-github-masterminds-sprig-dev +
// golang-k8s-sigs-yaml-dev): see render.sh next to this file.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// ---------------------------------------------------------------------------
// Command line

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type setFlag struct {
	list   *[]setArg
	asText bool
}
type setArg struct {
	expr   string
	asText bool
}

func (s setFlag) String() string { return "" }
func (s setFlag) Set(v string) error {
	*s.list = append(*s.list, setArg{v, s.asText})
	return nil
}

func usage() {
	fmt.Fprintf(os.Stderr, `usage: render CHART_DIR [--namespace NS] [--release NAME] [--set k=v ...]
              [--set-string k=v ...] [-f values.yaml ...] [--kube-version v1.30.0]
              [--api-versions group/version ...] [--skip-tests]
Renders the chart like 'helm template NAME CHART_DIR' and prints the manifests.
`)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fset := flag.NewFlagSet("render", flag.ContinueOnError)
	fset.Usage = usage
	namespace := fset.String("namespace", "default", "release namespace")
	fset.StringVar(namespace, "n", "default", "release namespace (shorthand)")
	release := fset.String("release", "crl", "release name")
	kubeVersion := fset.String("kube-version", "v1.30.0", "Kubernetes version for .Capabilities")
	skipTests := fset.Bool("skip-tests", false, "do not print test hooks")
	var valueFiles, apiVersions multiFlag
	var sets []setArg
	fset.Var(&valueFiles, "f", "values file (repeatable)")
	fset.Var(&valueFiles, "values", "values file (repeatable)")
	fset.Var(setFlag{&sets, false}, "set", "key=value (repeatable)")
	fset.Var(setFlag{&sets, true}, "set-string", "key=value, value kept a string (repeatable)")
	fset.Var(&apiVersions, "api-versions", "extra API version for .Capabilities.APIVersions (repeatable)")
	fset.Var(&apiVersions, "a", "extra API version (shorthand)")

	// Go's flag package stops at the first positional argument; let the
	// chart directory (and a `helm template`-style release name) go anywhere.
	var positional []string
	for len(args) > 0 {
		if err := fset.Parse(args); err != nil {
			return err
		}
		args = fset.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	var chartDir string
	switch len(positional) {
	case 1:
		chartDir = positional[0]
	case 2: // helm template NAME CHART
		*release, chartDir = positional[0], positional[1]
	default:
		usage()
		return errors.New("expected one chart directory (or NAME CHART)")
	}
	if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`).MatchString(*release) || len(*release) > 53 {
		return fmt.Errorf("invalid release name %q: a DNS-1123 subdomain of at most 53 characters", *release)
	}

	ch, err := loadChart(chartDir)
	if err != nil {
		return err
	}
	values, err := buildValues(ch, valueFiles, sets)
	if err != nil {
		return err
	}
	caps, err := newCapabilities(*kubeVersion, apiVersions)
	if err != nil {
		return err
	}
	if ch.Metadata.KubeVersion != "" {
		c, err := semver.NewConstraint(ch.Metadata.KubeVersion)
		if err != nil {
			return fmt.Errorf("Chart.yaml kubeVersion %q: %v", ch.Metadata.KubeVersion, err)
		}
		v, _ := semver.NewVersion(caps.KubeVersion.Version)
		if !c.Check(v) {
			return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
		}
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name":      *release,
			"Namespace": *namespace,
			"Service":   "Helm",
			"IsInstall": true,
			"IsUpgrade": false,
			"Revision":  1,
		},
		"Chart":        ch.Metadata,
		"Capabilities": caps,
		"Files":        ch.Files,
	}
	rendered, err := renderTemplates(ch, top)
	if err != nil {
		return err
	}
	out, err := assemble(rendered, *skipTests)
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(out)
	return err
}

// ---------------------------------------------------------------------------
// Chart loading

// Metadata mirrors Helm's chart.Metadata (the fields .Chart exposes).
type Metadata struct {
	Name         string                   `json:"name,omitempty"`
	Home         string                   `json:"home,omitempty"`
	Sources      []string                 `json:"sources,omitempty"`
	Version      string                   `json:"version,omitempty"`
	Description  string                   `json:"description,omitempty"`
	Keywords     []string                 `json:"keywords,omitempty"`
	Maintainers  []map[string]interface{} `json:"maintainers,omitempty"`
	Icon         string                   `json:"icon,omitempty"`
	APIVersion   string                   `json:"apiVersion,omitempty"`
	Condition    string                   `json:"condition,omitempty"`
	Tags         string                   `json:"tags,omitempty"`
	AppVersion   string                   `json:"appVersion,omitempty"`
	Deprecated   bool                     `json:"deprecated,omitempty"`
	Annotations  map[string]string        `json:"annotations,omitempty"`
	KubeVersion  string                   `json:"kubeVersion,omitempty"`
	Dependencies []map[string]interface{} `json:"dependencies,omitempty"`
	Type         string                   `json:"type,omitempty"`
}

type chart struct {
	Dir       string
	Metadata  *Metadata
	Values    map[string]interface{}
	Templates map[string]string // "templates/x.yaml" -> text
	Files     Files
}

func loadChart(dir string) (*chart, error) {
	ch := &chart{Dir: dir, Templates: map[string]string{}, Files: Files{}}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	ch.Metadata = &Metadata{}
	if err := yaml.UnmarshalStrict(raw, ch.Metadata); err != nil {
		return nil, fmt.Errorf("%s/Chart.yaml: %v", dir, err)
	}
	if ch.Metadata.Name == "" || ch.Metadata.Version == "" {
		return nil, fmt.Errorf("%s/Chart.yaml: name and version are required", dir)
	}
	if len(ch.Metadata.Dependencies) > 0 {
		return nil, fmt.Errorf("%s/Chart.yaml: chart dependencies are not supported by this renderer", dir)
	}
	ch.Values = map[string]interface{}{}
	if raw, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &ch.Values); err != nil {
			return nil, fmt.Errorf("%s/values.yaml: %v", dir, err)
		}
		if ch.Values == nil {
			ch.Values = map[string]interface{}{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ignore := loadHelmignore(dir)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if ignore(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel == "charts" {
				return fmt.Errorf("%s/charts: subcharts are not supported by this renderer", dir)
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == ".helmignore":
		case strings.HasPrefix(rel, "templates/"):
			ch.Templates[rel] = string(data)
		default:
			ch.Files[rel] = data
		}
		return nil
	})
	return ch, err
}

// loadHelmignore understands the usual .helmignore lines: comments, globs
// matched against the base name (or the whole path when they contain a
// slash), and "dir/" for directories. Negations are not supported.
func loadHelmignore(dir string) func(rel string, isDir bool) bool {
	var pats []string
	if raw, err := os.ReadFile(filepath.Join(dir, ".helmignore")); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			l = strings.TrimSpace(l)
			if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "!") {
				pats = append(pats, l)
			}
		}
	}
	return func(rel string, isDir bool) bool {
		for _, p := range pats {
			dirOnly := strings.HasSuffix(p, "/")
			p = strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
			if dirOnly && !isDir {
				continue
			}
			target := path.Base(rel)
			if strings.Contains(p, "/") {
				target = rel
			}
			if ok, _ := path.Match(p, target); ok {
				return true
			}
		}
		return false
	}
}

// Files is .Files: the chart's files outside templates/ (Helm's chart.Files).
type Files map[string][]byte

// Get returns a file's contents ("" when it does not exist), like Helm.
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's contents as bytes.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Lines returns a file's lines.
func (f Files) Lines(name string) []string {
	if f[name] == nil {
		return []string{}
	}
	return strings.Split(strings.TrimSuffix(string(f[name]), "\n"), "\n")
}

// Glob returns the files whose names match the pattern.
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

// AsConfig renders the files as ConfigMap data (base name -> contents).
func (f Files) AsConfig() string {
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = string(data)
	}
	return toYAML(m)
}

// AsSecrets renders the files as Secret data (base name -> base64).
func (f Files) AsSecrets() string {
	m := map[string][]byte{}
	for name, data := range f {
		m[path.Base(name)] = data
	}
	return toYAML(m) // []byte marshals as base64
}

// ---------------------------------------------------------------------------
// .Capabilities

type KubeVersion struct {
	Version string
	Major   string
	Minor   string
}

func (k KubeVersion) String() string     { return k.Version }
func (k KubeVersion) GitVersion() string { return k.Version }

type VersionSet []string

// Has reports whether "group/version" or "group/version/Kind" is available.
func (v VersionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]string
}

// The built-in API group versions of Kubernetes 1.30 (what Helm's
// DefaultVersionSet lists, without the per-kind entries).
var defaultAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1",
	"apiregistration.k8s.io/v1", "apps/v1", "authentication.k8s.io/v1",
	"authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
	"certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"events.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1",
	"node.k8s.io/v1", "policy/v1", "rbac.authorization.k8s.io/v1",
	"scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

func newCapabilities(version string, extra []string) (*Capabilities, error) {
	v, err := semver.NewVersion(version)
	if err != nil {
		return nil, fmt.Errorf("--kube-version %q: %v", version, err)
	}
	vs := append(VersionSet{}, defaultAPIVersions...)
	vs = append(vs, extra...)
	return &Capabilities{
		KubeVersion: KubeVersion{
			Version: "v" + v.String(),
			Major:   strconv.FormatUint(v.Major(), 10),
			Minor:   strconv.FormatUint(v.Minor(), 10),
		},
		APIVersions: vs,
		HelmVersion: map[string]string{"Version": "v3.15.0"},
	}, nil
}

// ---------------------------------------------------------------------------
// Values: -f files and --set

// buildValues mirrors Helm: the -f files are merged into one map, each
// --set is applied to that same map (so a[1]=x extends a list a -f file or an
// earlier --set gave), and the result is coalesced over the chart's
// values.yaml (maps merge, anything else replaces, null deletes).
func buildValues(ch *chart, files []string, sets []setArg) (map[string]interface{}, error) {
	user := map[string]interface{}{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		m := map[string]interface{}{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		mergeMaps(user, m)
	}
	for _, s := range sets {
		if err := parseSet(s.expr, s.asText, user); err != nil {
			return nil, fmt.Errorf("--set %s: %v", s.expr, err)
		}
	}
	vals := deepCopyMap(ch.Values)
	mergeInto(vals, user)
	return vals, nil
}

// mergeMaps merges src into dst (Helm's mergeMaps for -f files): maps merge
// key by key, anything else (null included) replaces.
func mergeMaps(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sm, ok := sv.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
}

func deepCopyMap(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		return deepCopyMap(t)
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = deepCopyValue(x)
		}
		return out
	}
	return v
}

// mergeInto merges src into dst like Helm's coalescing of user values over
// chart defaults: maps merge key by key, anything else replaces, and null
// deletes the key.
func mergeInto(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := sv.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				mergeInto(dm, sm)
				continue
			}
			sv = deepCopyMap(sm)
			pruneNulls(sv.(map[string]interface{}))
		}
		dst[k] = sv
	}
}

func pruneNulls(m map[string]interface{}) {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		} else if mm, ok := v.(map[string]interface{}); ok {
			pruneNulls(mm)
		}
	}
}

// parseSet applies one --set argument ("a.b=c,d[0]=e,f={x,y}") to m.
func parseSet(expr string, asText bool, m map[string]interface{}) error {
	for _, pair := range splitUnescaped(expr, ',', true) {
		if pair == "" {
			continue
		}
		eq := indexUnescaped(pair, '=')
		if eq < 0 {
			return fmt.Errorf("key %q has no value", pair)
		}
		key, raw := pair[:eq], pair[eq+1:]
		var val interface{}
		if !asText && strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
			var list []interface{}
			for _, item := range splitUnescaped(raw[1:len(raw)-1], ',', false) {
				list = append(list, typedVal(unescape(item), false))
			}
			if list == nil {
				list = []interface{}{}
			}
			val = list
		} else {
			val = typedVal(unescape(raw), asText)
		}
		if err := setPath(m, splitUnescaped(key, '.', false), val); err != nil {
			return err
		}
	}
	return nil
}

var indexRe = regexp.MustCompile(`^(.*?)\[(\d+)\]$`)

func setPath(m map[string]interface{}, keys []string, val interface{}) error {
	k := unescape(keys[0])
	if k == "" {
		return errors.New("empty key")
	}
	if mt := indexRe.FindStringSubmatch(k); mt != nil {
		name := mt[1]
		idx, _ := strconv.Atoi(mt[2])
		if idx > 65536 {
			return fmt.Errorf("index %d too large", idx)
		}
		list, _ := m[name].([]interface{})
		for len(list) <= idx {
			list = append(list, nil)
		}
		if len(keys) == 1 {
			list[idx] = val
		} else {
			sub, ok := list[idx].(map[string]interface{})
			if !ok {
				sub = map[string]interface{}{}
			}
			if err := setPath(sub, keys[1:], val); err != nil {
				return err
			}
			list[idx] = sub
		}
		m[name] = list
		return nil
	}
	if len(keys) == 1 {
		m[k] = val
		return nil
	}
	sub, ok := m[k].(map[string]interface{})
	if !ok {
		sub = map[string]interface{}{}
		m[k] = sub
	}
	return setPath(sub, keys[1:], val)
}

// typedVal types a --set value like Helm's strvals.
func typedVal(s string, asText bool) interface{} {
	if asText {
		return s
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	case "0":
		return int64(0)
	}
	if s != "" && s[0] != '0' {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	return s
}

// splitUnescaped splits on sep not preceded by a backslash (and, with
// braces, not inside {...}). Escapes are kept; unescape removes them.
func splitUnescaped(s string, sep byte, braces bool) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case braces && s[i] == '{':
			depth++
		case braces && s[i] == '}' && depth > 0:
			depth--
		case s[i] == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func indexUnescaped(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		} else if s[i] == c {
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Template functions Helm adds to sprig

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func funcMap(t **template.Template, chartName string) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	included := map[string]int{}
	f["include"] = func(name string, data interface{}) (string, error) {
		if included[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		included[name]++
		defer func() { included[name]-- }()
		var buf strings.Builder
		err := (*t).ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, vals map[string]interface{}) (string, error) {
		name := chartName + "/templates/tpl"
		if tm, ok := vals["Template"].(map[string]interface{}); ok {
			if n, ok := tm["Name"].(string); ok {
				name = n
			}
		}
		clone, err := (*t).Clone()
		if err != nil {
			return "", err
		}
		tt, err := clone.New(name).Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %v", text, err)
		}
		var buf strings.Builder
		if err := tt.Execute(&buf, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, val interface{}) (interface{}, error) {
		if val == nil {
			return val, errors.New(msg)
		}
		if s, ok := val.(string); ok && s == "" {
			return val, errors.New(msg)
		}
		return val, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["toYaml"] = toYAML
	f["mustToYaml"] = func(v interface{}) (string, error) {
		data, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(data), "\n"), err
	}
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromYamlArray"] = func(s string) []interface{} {
		a := []interface{}{}
		if err := yaml.Unmarshal([]byte(s), &a); err != nil {
			a = []interface{}{err.Error()}
		}
		return a
	}
	f["toJson"] = func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	}
	f["mustToJson"] = func(v interface{}) (string, error) {
		data, err := json.Marshal(v)
		return string(data), err
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromJsonArray"] = func(s string) []interface{} {
		a := []interface{}{}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			a = []interface{}{err.Error()}
		}
		return a
	}
	f["toToml"] = func(v interface{}) (string, error) {
		return "", errors.New("toToml is not supported by this renderer")
	}
	return f
}

// ---------------------------------------------------------------------------
// Rendering

type renderedFile struct {
	name string // <chart>/templates/<file>
	text string
}

func renderTemplates(ch *chart, top map[string]interface{}) ([]renderedFile, error) {
	chartName := ch.Metadata.Name
	var names []string
	for n := range ch.Templates {
		names = append(names, n)
	}
	// Helpers (_*) first, so every define exists before any file is run;
	// then the rest by name.
	sort.Slice(names, func(i, j int) bool {
		hi, hj := strings.HasPrefix(path.Base(names[i]), "_"), strings.HasPrefix(path.Base(names[j]), "_")
		if hi != hj {
			return hi
		}
		return names[i] < names[j]
	})
	var t *template.Template
	t = template.New("gotpl").Option("missingkey=zero").Funcs(funcMap(&t, chartName))
	for _, n := range names {
		if _, err := t.New(chartName + "/" + n).Parse(ch.Templates[n]); err != nil {
			return nil, err
		}
	}
	var out []renderedFile
	for _, n := range names {
		full := chartName + "/" + n
		base := path.Base(n)
		if strings.HasPrefix(base, "_") {
			continue
		}
		vals := make(map[string]interface{}, len(top)+1)
		for k, v := range top {
			vals[k] = v
		}
		vals["Template"] = map[string]interface{}{"Name": full, "BasePath": chartName + "/templates"}
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, full, vals); err != nil {
			return nil, err
		}
		if base == "NOTES.txt" {
			// Rendered (an error in it fails `helm install` and `helm
			// template` alike) but not printed, like `helm template`.
			continue
		}
		out = append(out, renderedFile{full, strings.ReplaceAll(buf.String(), "<no value>", "")})
	}
	return out, nil
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

type manifest struct {
	source  string
	content string
	kind    string
	weight  int
}

var docSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// assemble splits every file into documents, checks each is YAML, and
// prints them the way `helm template` does: regular manifests sorted by
// kind (install order), then hooks (tests included) by weight and kind.
func assemble(files []renderedFile, skipTests bool) (string, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].name < files[j].name })
	var generic, hooks []manifest
	for _, f := range files {
		if strings.TrimSpace(f.text) == "" {
			continue
		}
		for _, doc := range docSep.Split(f.text, -1) {
			doc = strings.TrimSpace(doc)
			if doc == "" {
				continue
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return "", fmt.Errorf("YAML parse error on %s: %v\n--- document ---\n%s", f.name, err, numbered(doc))
			}
			m := manifest{source: f.name, content: doc, kind: head.Kind}
			if hook, ok := head.Metadata.Annotations["helm.sh/hook"]; ok {
				if skipTests && strings.Contains(hook, "test") {
					continue
				}
				m.weight, _ = strconv.Atoi(head.Metadata.Annotations["helm.sh/hook-weight"])
				hooks = append(hooks, m)
			} else {
				generic = append(generic, m)
			}
		}
	}
	order := map[string]int{}
	for i, k := range installOrder {
		order[k] = i
	}
	less := func(a, b manifest) bool {
		oa, aok := order[a.kind]
		ob, bok := order[b.kind]
		switch {
		case !aok && !bok:
			return a.kind < b.kind
		case !aok:
			return false
		case !bok:
			return true
		}
		return oa < ob
	}
	sort.SliceStable(generic, func(i, j int) bool { return less(generic[i], generic[j]) })
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].weight != hooks[j].weight {
			return hooks[i].weight < hooks[j].weight
		}
		return less(hooks[i], hooks[j])
	})
	var b bytes.Buffer
	for _, m := range append(generic, hooks...) {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.source, m.content)
	}
	return b.String(), nil
}

func numbered(doc string) string {
	var b strings.Builder
	for i, l := range strings.Split(doc, "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}
