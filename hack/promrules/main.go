// Command promrules checks Prometheus rule files the way `promtool check rules` does, with
// the Prometheus project's own rule parser (model/rulefmt: the YAML shape, rule and label
// names, every expression parsed as PromQL, annotation templates) and promtool's check for
// duplicate rules, without promtool's service-discovery plugins and their cloud SDKs
// (which make promtool's build take the better part of an hour on 2 cores).
//
// Usage: promrules FILE...   (exit 0 when every file is valid; 1 otherwise)
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := parser.NewParser(parser.Options{})
	failed := false
	for _, file := range os.Args[1:] {
		fmt.Println("Checking", file)
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, p, logger)
		if len(errs) > 0 {
			failed = true
			fmt.Fprintln(os.Stderr, "  FAILED:")
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, err.Error())
			}
			continue
		}
		if dups := duplicates(groups.Groups); len(dups) > 0 {
			failed = true
			fmt.Fprintf(os.Stderr, "  FAILED:\n%d duplicate rule(s) found: %s\n", len(dups),
				strings.Join(dups, "; "))
			continue
		}
		rules := 0
		for _, group := range groups.Groups {
			rules += len(group.Rules)
		}
		fmt.Printf("  SUCCESS: %d rules found\n\n", rules)
	}
	if failed || len(os.Args) < 2 {
		os.Exit(1)
	}
}

// duplicates names the rules (record or alert name and labels, the group's included) that
// appear more than once, as promtool's lint does.
func duplicates(groups []rulefmt.RuleGroup) []string {
	seen := map[string]int{}
	for _, group := range groups {
		for _, rule := range group.Rules {
			labels := map[string]string{}
			for k, v := range group.Labels {
				labels[k] = v
			}
			for k, v := range rule.Labels {
				labels[k] = v
			}
			keys := make([]string, 0, len(labels))
			for k := range labels {
				keys = append(keys, k+"="+labels[k])
			}
			sort.Strings(keys)
			seen[rule.Record+rule.Alert+"{"+strings.Join(keys, ",")+"}"]++
		}
	}
	var found []string
	for key, n := range seen {
		if n > 1 {
			found = append(found, key)
		}
	}
	sort.Strings(found)
	return found
}
