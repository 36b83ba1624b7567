package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
)

// formPostScript submits the response_mode=form_post page (OAuth 2.0 Form Post Response
// Mode). It is the page's only script, fixed, so the CSP allows exactly it by its hash and
// never 'unsafe-inline'.
const formPostScript = `document.forms[0].submit();`

// formPostBody is the form_post page's body in the hosted layout. It is built in, not
// replaceable from Config.TemplateFS, because its script must match formPostScriptHash. The
// button is always visible: it is the way forward without JavaScript.
const formPostBody = `{{template "top" .}}
<p>Returning you to the application…</p>
<form method="post" action="{{.Action}}">
{{range $name, $values := .Params}}{{range $values}}<input type="hidden" name="{{$name}}" value="{{.}}">
{{end}}{{end}}<button type="submit">Continue</button>
</form>
<script>` + formPostScript + `</script>
{{template "bottom" .}}`

// formPostScriptHash is the CSP source that allows formPostScript, the form_post page's
// policy's one addition to the hosted pages' policy.
var formPostScriptHash = func() string {
	sum := sha256.Sum256([]byte(formPostScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// formPost writes the authorization response (or error) as a page that posts params to
// the client's verified redirect URI.
func (ps *pages) formPost(w http.ResponseWriter, redirectURI string, params url.Values) {
	var buf bytes.Buffer
	v := formPostView{Page: Page{Title: "Continue", Base: ps.mount}, Action: template.URL(redirectURI), Params: params}
	if err := ps.formPostPage.Execute(&buf, v); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w, ps.formPostCSP)
	h := w.Header()
	h.Set("Pragma", "no-cache")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
