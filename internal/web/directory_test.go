package web_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// directoryUser is a user of the test Directory with their keys.
type directoryUser struct{ name, ak, sk string }

var (
	alice = directoryUser{"alice", "pcak_alice_web_test_0001", "alice-secret-web-test-0001"}
	bob   = directoryUser{"bob", "pcak_bob_web_test_00001", "bob-secret-web-test-00001"}
)

// directoryConfig writes a Directory of three Datasets: pub (public),
// mine (alice's) and theirs (bob's), each with one trajectory.
func directoryConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"pub", "mine", "theirs"} {
		body := strings.ReplaceAll(divergingATIF(d+"-run", "ls"), `"name": "long"`, `"name": "`+d+`-agent"`)
		if err := writeFile(filepath.Join(dir, d, d+".trajectory.json"), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`[meta]
version = 1
revision = 1

[users.alice]
access_key = %q
secret_key = %q

[users.bob]
access_key = %q
secret_key = %q

[datasets.pub]
uri = %q

[datasets.mine]
uri = %q

[datasets.theirs]
uri = %q

[[grants]]
user = "*"
dataset = "pub"

[[grants]]
user = "alice"
dataset = "mine"

[[grants]]
user = "bob"
dataset = "theirs"
`, alice.ak, alice.sk, bob.ak, bob.sk, filepath.Join(dir, "pub"), filepath.Join(dir, "mine"), filepath.Join(dir, "theirs"))
	p := filepath.Join(dir, "catalog.toml")
	if err := writeFile(p, []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExplorerDirectory drives the Explorer of `serve --catalog-config` in
// Chromium: without keys it browses the public Dataset and a private one
// leads to Settings → Keys; with a user's keys (stored in localStorage,
// sent on /api/ requests) it shows that user's Datasets and no other's.
func TestExplorerDirectory(t *testing.T) {
	needChromium(t)
	s := serve(t, "--catalog-config", directoryConfig(t))
	p := &page{t: t, ctx: browser(t, 1400, 900), url: s.url}
	datasets := `[...document.querySelectorAll('#dataset-select option')].map(o => o.value).filter(Boolean).sort().join(',')`
	setKeys := func(u directoryUser) {
		t.Helper()
		p.open("/settings")
		run(t, p.ctx, "save the keys of "+u.name, chromedp.SetValue(chromedp.CSS("#access-key"), u.ak), chromedp.SetValue(chromedp.CSS("#secret-key"), u.sk),
			js(`document.querySelector("#access-key").form.requestSubmit()`))
	}

	t.Run("without keys", func(t *testing.T) {
		p.t = t
		p.open("/")
		p.until("the public Dataset only", `document.querySelectorAll('section.dataset').length === 1 && `+datasets+` === 'pub'`)
		if b := p.str(`document.querySelector('#snapshot-badge').textContent`); b != "Directory · public Datasets" {
			t.Errorf("badge: %q", b)
		}
		if p.str(`String(document.querySelector('#refresh').hidden)`) != "true" {
			t.Errorf("a Directory's Catalog offers Refresh")
		}
		p.open("/runs?dataset=pub")
		p.until("its run", `document.querySelectorAll('#runs-table tbody tr').length === 1`)
		p.shot("directory-public")
		// A private Dataset answers 401: the page asks for keys.
		p.open("/runs?dataset=mine")
		p.until("the Keys page", `location.pathname === '/settings' && !document.querySelector('#notice').hidden &&
			document.querySelector('#notice').textContent.includes('This needs your Directory keys')`)
		p.shot("directory-keys-needed")
	})

	t.Run("alice", func(t *testing.T) {
		p.t = t
		p.open("/runs?dataset=mine") // to the Keys page, with the way back
		p.until("the Keys page", `location.pathname === '/settings' && new URLSearchParams(location.search).get('back') === '/runs?dataset=mine'`)
		run(t, p.ctx, "save alice's keys", chromedp.SetValue(chromedp.CSS("#access-key"), alice.ak), chromedp.SetValue(chromedp.CSS("#secret-key"), alice.sk),
			js(`document.querySelector("#access-key").form.requestSubmit()`))
		p.until("her Datasets", `document.querySelector('.settings [role=status]').textContent.startsWith('Saved: 2 Datasets') && `+datasets+` === 'mine,pub'`)
		if ak := p.str(`localStorage.getItem('pchronicle.catalog.access_key')`); ak != alice.ak {
			t.Fatalf("stored access key %q", ak)
		}
		p.click("#keys-back")
		p.until("her run", `location.search === '?dataset=mine' && document.querySelectorAll('#runs-table tbody tr').length === 1 &&
			document.querySelector('#runs-table').textContent.includes('mine-agent')`)
		p.click("#runs-table tbody tr a.open")
		p.until("its Storyline", `location.pathname === '/storyline' && document.querySelector('#timeline') && document.querySelector('#timeline').dataset.rows === '700'`)
		p.click("#step-row-0")
		p.until("a step", `document.querySelector('#step-detail').dataset.step === '0' && document.querySelector('#step-detail [data-field=message]')`)
		p.shot("directory-alice-storyline")
		p.open("/runs?dataset=theirs")
		p.until("bob's Dataset is not hers", `(document.querySelector('#view .error-box') || {}).textContent?.includes('not found')`)
	})

	t.Run("bob", func(t *testing.T) {
		p.t = t
		setKeys(bob)
		p.until("his Datasets", `document.querySelector('.settings [role=status]').textContent.startsWith('Saved: 2 Datasets') && `+datasets+` === 'pub,theirs'`)
		p.open("/runs")
		p.until("his runs across his Datasets", `document.querySelectorAll('#runs-table tbody tr').length === 2 &&
			!document.querySelector('#runs-table').textContent.includes('mine-agent')`)
		p.shot("directory-bob-runs")
	})

	t.Run("wrong keys", func(t *testing.T) {
		p.t = t
		setKeys(directoryUser{"mallory", alice.ak, "not-her-secret"})
		p.until("refused", `document.querySelector('.settings [role=status]').textContent.startsWith('Saved, but the server refused them')`)
		p.open("/runs?dataset=pub")
		p.until("back to the Keys page", `location.pathname === '/settings' && document.querySelector('#notice').textContent.includes('The server refused these keys')`)
		p.click("#clear-keys")
		p.until("forgotten", `localStorage.getItem('pchronicle.catalog.access_key') === null`)
		p.open("/runs?dataset=pub")
		p.until("public again", `document.querySelectorAll('#runs-table tbody tr').length === 1`)
	})
	checkNothingRan(t, p)
}
