package allocnet

// ForgetAddress makes the allocation's record look like an agent died in
// the middle of its CNI ADD: written, with a namespace, without a result.
func ForgetAddress(m *Manager, allocID string) error {
	rec, err := m.readRecord(allocID)
	if err != nil {
		return err
	}
	rec.Status.Address = ""
	return m.writeRecord(rec)
}
