//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// matrixFile holds the lab's scenario matrix: its Services and, per
// Service, its EndpointSlices as compact lists (the file's head comment
// tells their form).
const matrixFile = "testdata/matrix.yaml"

// matrix is the matrix file, read and checked.
type matrix struct {
	// name is the file's name.
	name string
	// services is every Service manifest, as YAML documents.
	services string
	slices   []sliceSpec
}

// matrixDoc is one document of the matrix file.
type matrixDoc struct {
	Service yaml.Node   `yaml:"service"`
	Slices  []sliceSpec `yaml:"slices"`
}

// loadMatrix reads and checks the matrix file at path.
func loadMatrix(path string) (*matrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return parseMatrix(path, data)
}

// parseMatrix reads the documents of a matrix file; name is the file's,
// for errors.
func parseMatrix(name string, data []byte) (*matrix, error) {
	m, err := parseDocs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.name = name
	return m, nil
}

// parseDocs reads the documents of a matrix file.
func parseDocs(data []byte) (*matrix, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var services bytes.Buffer
	enc := yaml.NewEncoder(&services)
	enc.SetIndent(2)
	m := &matrix{}
	seen := map[string]bool{}
	for i := 1; ; i++ {
		var doc matrixDoc
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		svc, err := checkService(&doc.Service)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		for _, s := range doc.Slices {
			if err := s.check(svc); err != nil {
				return nil, fmt.Errorf("document %d, service %s: %w", i, svc.Metadata.Name, err)
			}
			if seen["slice "+s.Name] {
				return nil, fmt.Errorf("document %d: a second EndpointSlice %s", i, s.Name)
			}
			seen["slice "+s.Name] = true
			s.service = svc.Metadata.Name
			m.slices = append(m.slices, s)
		}
		if seen["service "+svc.Metadata.Name] {
			return nil, fmt.Errorf("document %d: a second Service %s", i, svc.Metadata.Name)
		}
		seen["service "+svc.Metadata.Name] = true
		if err := enc.Encode(&doc.Service); err != nil {
			return nil, fmt.Errorf("document %d: writing Service %s: %w", i, svc.Metadata.Name, err)
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no Service")
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the Services: %w", err)
	}
	m.services = services.String()
	return m, nil
}

// serviceHead is what the matrix needs of a Service manifest.
type serviceHead struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		Ports []struct {
			Name     string `yaml:"name"`
			Protocol string `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// checkService reads the head of a document's Service: a v1 Service in
// namespace default, the one the slices are written for.
func checkService(n *yaml.Node) (*serviceHead, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("no service manifest")
	}
	var h serviceHead
	if err := n.Decode(&h); err != nil {
		return nil, fmt.Errorf("service at line %d: %w", n.Line, err)
	}
	switch {
	case h.APIVersion != "v1" || h.Kind != "Service":
		return nil, fmt.Errorf("line %d: service is a %s %s, want a v1 Service", n.Line, h.APIVersion, h.Kind)
	case h.Metadata.Name == "":
		return nil, fmt.Errorf("line %d: service has no name", n.Line)
	case h.Metadata.Namespace != "default":
		return nil, fmt.Errorf("line %d: service %s is in namespace %q; the matrix is in namespace default", n.Line, h.Metadata.Name, h.Metadata.Namespace)
	}
	return &h, nil
}

// check tells whether the slice is whole and its ports are the Service's.
func (s sliceSpec) check(svc *serviceHead) error {
	if s.Name == "" {
		return errors.New("an EndpointSlice without a name")
	}
	if len(s.Ports) == 0 {
		return fmt.Errorf("EndpointSlice %s has no ports", s.Name)
	}
	for _, p := range s.Ports {
		found := false
		for _, sp := range svc.Spec.Ports {
			proto := sp.Protocol
			if proto == "" {
				proto = "TCP"
			}
			found = found || sp.Name == p.Name && proto == p.Protocol
		}
		if !found {
			return fmt.Errorf("EndpointSlice %s: port %q (%s) is no port of the Service", s.Name, p.Name, p.Protocol)
		}
		if p.Port < 1 || p.Port > 65535 {
			return fmt.Errorf("EndpointSlice %s: port %q: number %d is out of range", s.Name, p.Name, p.Port)
		}
	}
	return nil
}

var update = flag.Bool("update", false, "rewrite testdata/matrix.golden.yaml")

const matrixGolden = "testdata/matrix.golden.yaml"
