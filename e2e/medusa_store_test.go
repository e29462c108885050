//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
)

// The storefront side of the Medusa backend tests: a client of the store API that prepares and
// completes carts the way a storefront does, and the count of a cart's orders in the database.

// store is a storefront client of the server with the seed's publishable key.
func (m *medusaServer) store() *storeClient {
	return &storeClient{base: m.URL, seed: m.seed, client: &http.Client{
		Timeout:   medusaRequestTimeout,
		Transport: &http.Transport{DisableKeepAlives: true}, // nothing left open when the test ends
	}}
}

// storeClient calls Medusa's store API as a storefront does: every request carries the
// publishable API key (x-publishable-api-key), which also picks the sales channel.
type storeClient struct {
	base   string
	seed   medusaSeed
	client *http.Client
}

// storeReply is one answer of the store API.
type storeReply struct {
	status int
	body   []byte
}

// post sends body as JSON to path and returns the answer. It may be called from any goroutine.
func (c *storeClient) post(ctx context.Context, path string, body any) (storeReply, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return storeReply{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
	if err != nil {
		return storeReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-publishable-api-key", c.seed.PublishableKey)
	resp, err := c.client.Do(req)
	if err != nil {
		return storeReply{}, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return storeReply{}, fmt.Errorf("POST %s: %w", path, err)
	}
	return storeReply{status: resp.StatusCode, body: got}, nil
}

// postOK posts body to path and decodes a 200 answer into out; any other answer is an error
// naming the step.
func (c *storeClient) postOK(ctx context.Context, step, path string, body, out any) error {
	r, err := c.post(ctx, path, body)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", step, err)
	case r.status != http.StatusOK:
		return fmt.Errorf("%s: POST %s answered %d: %s", step, path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("%s: POST %s answered %s: %w", step, path, r.body, err)
	}
	return nil
}

// shopperAddress is the address of every cart (in the seeded region's country).
func (c *storeClient) shopperAddress() map[string]string {
	return map[string]string{
		"first_name": "Ada", "last_name": "Shopper", "address_1": "Testvej 1",
		"city": "Copenhagen", "postal_code": "1000", "country_code": c.seed.CountryCode,
	}
}

// createCart creates an empty cart in the seeded region and returns its id.
func (c *storeClient) createCart(ctx context.Context) (string, error) {
	var created struct {
		Cart struct {
			ID string `json:"id"`
		} `json:"cart"`
	}
	if err := c.postOK(ctx, "create the cart", "/store/carts", map[string]any{"region_id": c.seed.RegionID}, &created); err != nil {
		return "", err
	}
	return created.Cart.ID, nil
}

// addLineItem adds one of the seeded variant to the cart.
func (c *storeClient) addLineItem(ctx context.Context, cartID string) error {
	var out struct{}
	return c.postOK(ctx, "add a line item", "/store/carts/"+cartID+"/line-items",
		map[string]any{"variant_id": c.seed.VariantID, "quantity": 1}, &out)
}

// prepareCart makes a cart ready to complete, as a storefront's checkout does: create it, add a
// line item, set the email and addresses, pick the seeded shipping option, create the payment
// collection and a session of the system payment provider (pp_system_default). It returns the
// cart's id and may be called from any goroutine.
func (c *storeClient) prepareCart(ctx context.Context) (string, error) {
	id, err := c.createCart(ctx)
	if err != nil {
		return "", err
	}
	if err := c.addLineItem(ctx, id); err != nil {
		return id, err
	}
	var out struct{}
	if err := c.postOK(ctx, "set email and addresses", "/store/carts/"+id, map[string]any{
		"email": "shopper@example.com", "shipping_address": c.shopperAddress(), "billing_address": c.shopperAddress(),
	}, &out); err != nil {
		return id, err
	}
	if err := c.postOK(ctx, "add the shipping method", "/store/carts/"+id+"/shipping-methods",
		map[string]any{"option_id": c.seed.ShippingOptionID}, &out); err != nil {
		return id, err
	}
	var collection struct {
		PaymentCollection struct {
			ID string `json:"id"`
		} `json:"payment_collection"`
	}
	if err := c.postOK(ctx, "create the payment collection", "/store/payment-collections",
		map[string]any{"cart_id": id}, &collection); err != nil {
		return id, err
	}
	if err := c.postOK(ctx, "create the payment session", "/store/payment-collections/"+collection.PaymentCollection.ID+"/payment-sessions",
		map[string]any{"provider_id": "pp_system_default"}, &out); err != nil {
		return id, err
	}
	return id, nil
}

// completion is the answer to POST /store/carts/:id/complete.
type completion struct {
	status  int
	orderID string // set when the answer is 200 with type "order"
	body    string
	err     error // the request failed (no answer)
}

// complete completes the cart. It may be called from any goroutine.
func (c *storeClient) complete(ctx context.Context, cartID string) completion {
	r, err := c.post(ctx, "/store/carts/"+cartID+"/complete", map[string]any{})
	if err != nil {
		return completion{err: err}
	}
	res := completion{status: r.status, body: string(r.body)}
	var done struct {
		Type  string `json:"type"`
		Order struct {
			ID string `json:"id"`
		} `json:"order"`
	}
	if r.status == http.StatusOK && json.Unmarshal(r.body, &done) == nil && done.Type == "order" {
		res.orderID = done.Order.ID
	}
	return res
}

// completeCart prepares a cart and completes it, failing the test unless an order results; it
// returns the cart's and the order's ids.
func (c *storeClient) completeCart(t *testing.T) (cartID, orderID string) {
	t.Helper()
	ctx := t.Context()
	cartID, err := c.prepareCart(ctx)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	res := c.complete(ctx, cartID)
	if res.err != nil || res.orderID == "" {
		t.Fatalf("e2e: completing cart %s: %d %s (%v)", cartID, res.status, res.body, res.err)
	}
	return cartID, res.orderID
}

// ordersOfCart counts the orders linked to the cart in the database (Medusa's order-cart link).
func (s *medusaStack) ordersOfCart(t *testing.T, cartID string) int {
	t.Helper()
	n, err := strconv.Atoi(s.pg.Query(t, s.db,
		fmt.Sprintf("SELECT count(*) FROM order_cart WHERE cart_id = '%s' AND deleted_at IS NULL", sqlSafe(t, cartID))))
	if err != nil {
		t.Fatalf("e2e: count the orders of %s: %v", cartID, err)
	}
	return n
}

// sqlSafe fails the test unless id is made of letters, digits and underscores (Medusa's ids
// are), so it can be quoted into SQL as is.
func sqlSafe(t *testing.T, id string) string {
	t.Helper()
	for _, r := range id {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			t.Fatalf("e2e: unexpected id %q", id)
		}
	}
	return id
}
