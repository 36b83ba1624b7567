package ui

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestPagesLinkUnderTheMountPath renders every embedded page of a provider mounted under
// /auth and checks that each link, form action and stylesheet it writes itself lies under
// /auth: a root-relative path would leave the provider for the embedding site.
func TestPagesLinkUnderTheMountPath(t *testing.T) {
	ps, err := newPages(nil, ContentSecurityPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ps.mount = "/auth"
	for name, pv := range pageViews {
		t.Run(name, func(t *testing.T) {
			v := reflect.New(reflect.TypeOf(pv.view).Elem()).Interface().(view)
			if fv, ok := v.(formView); ok {
				fv.form().Request = "request-token" // runs the {{with .Request}} bodies
			}
			if lv, ok := v.(*LogoutView); ok {
				lv.Action = "/auth" + LogoutPath // the view carries it; the provider's tests check it
			}
			w := httptest.NewRecorder()
			ps.render(w, httptest.NewRequest(http.MethodGet, "/auth/x", nil), http.StatusOK, name, v)
			urls := pageURLs(t, w.Body.String())
			if len(urls) == 0 {
				t.Fatal("the page has no link, action or stylesheet")
			}
			for _, u := range urls {
				if !strings.HasPrefix(u, "/auth/") {
					t.Errorf("got %q, want a path under /auth/", u)
				}
			}
		})
	}
}

// pageURLs are the href, action and src attributes of an HTML page.
func pageURLs(t *testing.T, page string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "href" || a.Key == "action" || a.Key == "src" {
				out = append(out, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}
