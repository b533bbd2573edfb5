package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// defaultRequestTimeout bounds each API request when the user gives no
// --request-timeout, so that an unreachable API server fails the command
// instead of hanging it.
const defaultRequestTimeout = "30s"

// setupKubectlFlags finishes the flags of a command that reads the
// cluster: svctrace's default --request-timeout, and shell completion for
// every flag whose values can be listed.
func setupKubectlFlags(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("request-timeout"); f != nil && !f.Changed {
		if err := f.Value.Set(defaultRequestTimeout); err == nil {
			f.DefValue = defaultRequestTimeout
		}
	}
	registerFlagCompletions(cmd)
}

// newClientset returns an API client for the cluster the kubeconfig flags
// point at.
func newClientset(cf *genericclioptions.ConfigFlags) (kubernetes.Interface, error) {
	cfg, err := restConfig(cf)
	if err != nil {
		return nil, err
	}
	// Built-in objects in protobuf: a 10,000-Service cluster's lists decode
	// several times faster than in JSON. JSON stays acceptable.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating API client: %w", err)
	}
	return cs, nil
}

// restConfig resolves the kubeconfig flags the way kubectl does, except
// that finding no configuration at all is an error: client-go would then
// quietly talk to http://localhost:8080.
func restConfig(cf *genericclioptions.ConfigFlags) (*rest.Config, error) {
	loader := cf.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	if clientcmd.IsEmptyConfig(clientcmd.Validate(raw)) && !serverGiven(cf) {
		if !inCluster() {
			return nil, &noKubeconfigError{explicit: deref(cf.KubeConfig), env: os.Getenv(clientcmd.RecommendedConfigPathEnvVar)}
		}
		return inClusterConfig(cf)
	}
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	return cfg, nil
}

// serverGiven tells whether an API server address was given without a
// kubeconfig: --server, or the legacy KUBERNETES_MASTER variable.
func serverGiven(cf *genericclioptions.ConfigFlags) bool {
	return deref(cf.APIServer) != "" || os.Getenv("KUBERNETES_MASTER") != ""
}

// inCluster tells whether client-go can use the in-cluster configuration
// of a pod's service account.
func inCluster() bool {
	_, err := rest.InClusterConfig()
	return err == nil
}

// inClusterConfig is the configuration of the pod's service account, with the flags that
// still apply in a pod: --request-timeout and impersonation. client-go falls back to it by
// itself only when no flag changed the default configuration, and svctrace always sets a
// request timeout.
func inClusterConfig(cf *genericclioptions.ConfigFlags) (*rest.Config, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	if t := deref(cf.Timeout); t != "" && t != "0" {
		d, err := time.ParseDuration(t)
		if err != nil {
			// kubectl's form without a unit means seconds.
			secs, serr := strconv.Atoi(t)
			if serr != nil {
				return nil, fmt.Errorf("--request-timeout %q: %w", t, err)
			}
			d = time.Duration(secs) * time.Second
		}
		cfg.Timeout = d
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: deref(cf.Impersonate), UID: deref(cf.ImpersonateUID)}
	if cf.ImpersonateGroup != nil {
		cfg.Impersonate.Groups = *cf.ImpersonateGroup
	}
	return cfg, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// noKubeconfigError says where svctrace looked for a kubeconfig. It wraps
// clientcmd.ErrEmptyConfig.
type noKubeconfigError struct {
	explicit string // --kubeconfig
	env      string // $KUBECONFIG
}

func (e *noKubeconfigError) Error() string {
	const withoutCluster = "work without a cluster: --snapshot FILE reads a snapshot made by \"collect\""
	if e.explicit != "" {
		return fmt.Sprintf("the kubeconfig %s (--kubeconfig) is empty; give another, or %s", e.explicit, withoutCluster)
	}
	looked := fmt.Sprintf("KUBECONFIG is not set, %s does not exist (or is empty)", clientcmd.RecommendedHomeFile)
	if e.env != "" {
		looked = fmt.Sprintf("KUBECONFIG=%s names no file with a configuration (%s is read only when KUBECONFIG is unset)",
			e.env, clientcmd.RecommendedHomeFile)
	}
	return fmt.Sprintf("no kubeconfig found: %s and there is no in-cluster service account (KUBERNETES_SERVICE_HOST and its token); give one with --kubeconfig FILE, or %s",
		looked, withoutCluster)
}

func (e *noKubeconfigError) Unwrap() error { return clientcmd.ErrEmptyConfig }

// configFlagsFrom returns kubeconfig flags holding the values given in fs,
// for code that sees a command's flags but not the options they fill
// (argument completion).
func configFlagsFrom(fs *pflag.FlagSet) (*genericclioptions.ConfigFlags, error) {
	cf := genericclioptions.NewConfigFlags(false)
	own := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	cf.AddFlags(own)
	var errs []error
	own.VisitAll(func(f *pflag.Flag) {
		given := fs.Lookup(f.Name)
		if given == nil || !given.Changed {
			return
		}
		var err error
		src, isSlice := given.Value.(pflag.SliceValue)
		dst, toSlice := f.Value.(pflag.SliceValue)
		if isSlice && toSlice {
			err = dst.Replace(src.GetSlice())
		} else {
			err = f.Value.Set(given.Value.String())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
		}
	})
	return cf, errors.Join(errs...)
}
