package allocrunner

import "fmt"

// UserPolicy is the client's user.denylist over user.checked_drivers: the
// users a task of a checked driver may not run as. The zero value denies
// nothing.
type UserPolicy struct {
	Denylist       map[string]bool
	CheckedDrivers map[string]bool
}

// check returns why a task of driver may not run as user, or nil.
func (p UserPolicy) check(driver, user string) error {
	if user == "" || !p.CheckedDrivers[driver] || !p.Denylist[user] {
		return nil
	}
	return fmt.Errorf("running as user %q is disallowed (the client's user.denylist applies to the %s driver)", user, driver)
}
