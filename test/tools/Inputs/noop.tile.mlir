module {
  func.func @k() attributes {tile.target = "sm_80"} {
    return
  }
}
